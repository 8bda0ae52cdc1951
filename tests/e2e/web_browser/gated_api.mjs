// An API behind deskd's API gate for the browser test: https://broker.test:PORT served on
// 127.0.0.1 by Node with a certificate from a CA of its own (made with openssl as
// tests/e2e/fake_broker.cpp makes its own), and the [[api]] table that names it with one
// `ask` rule, so that each order waits for a person on the Decisions page. It answers every
// request with a small JSON body and keeps the requests it got (to see the key put in).

import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { join } from 'node:path';

/** The key deskd puts into the gated requests; the desk holds only a placeholder. */
export const BROKER_KEY = 'deskd-web-broker-key';

function makeCertificates(folder) {
  const openssl = (...arguments_) => execFileSync('openssl', arguments_, { cwd: folder, stdio: ['ignore', 'ignore', 'pipe'] });
  const p256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...p256, '-days', '2', '-subj', '/CN=deskd web test broker CA', '-keyout', 'ca.key', '-out', 'ca.pem');
  openssl('req', ...p256, '-subj', '/CN=broker.test', '-keyout', 'server.key', '-out', 'server.csr');
  writeFileSync(join(folder, 'san.ext'), 'subjectAltName=DNS:broker.test\n');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
    '-extfile', 'san.ext', '-out', 'server.pem');
}

/**
 * Starts the broker with its files in a temporary folder; returns {origin, table, requests,
 * close}: `table` is the [[api]] TOML (name "broker") for deskd's config.
 */
export async function startBroker() {
  const files = mkdtempSync('/var/tmp/deskd-web-broker-');
  makeCertificates(files);
  const keyFile = join(files, 'broker.key');
  writeFileSync(keyFile, `${BROKER_KEY}\n`);
  chmodSync(keyFile, 0o600);
  const requests = [];
  const server = createServer({ key: readFileSync(join(files, 'server.key')), cert: readFileSync(join(files, 'server.pem')) },
    (request, response) => {
      let body = '';
      request.on('data', (chunk) => { body += chunk; });
      request.on('end', () => {
        requests.push({ method: request.method, url: request.url, authorization: request.headers.authorization, body });
        response.writeHead(200, { 'Content-Type': 'application/json' });
        response.end('{"status": "success", "order_id": "250101000000001"}\n');
      });
    });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `https://broker.test:${server.address().port}`;
  const table = `[[api]]\nname = "broker"\norigins = ["${origin}"]\naddresses = ["127.0.0.1"]\n` +
    `ca_file = "${join(files, 'ca.pem')}"\n\n` +
    `  [[api.credential]]\n  variable = "BROKER_API_KEY"\n  key_file = "${keyFile}"\n  header = "Authorization"\n` +
    '  template = "token {key}"\n\n' +
    '  [[api.rule]]\n  name = "orders wait for a person"\n  methods = ["POST"]\n  path = "/orders/**"\n  action = "ask"\n';
  const close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(files, { recursive: true, force: true });
  };
  return { origin, table, requests, close };
}
