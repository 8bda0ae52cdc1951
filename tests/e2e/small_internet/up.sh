#!/bin/sh
# Builds the egress tests' small internet: a network namespace NAME of the test's own, joined
# by a veth pair to the namespace this script runs in (the test's, where deskd runs), with
# two subnets: 10.201.0.0/24 stands for the public internet (the config names it
# explicitly), 10.202.0.0/24 for a private network deskd must refuse. In NAME: servers.py
# (DNS on 10.201.0.53, HTTP/HTTPS, a dumb-HTTP git repository, a one-wheel package index,
# canaries on 10.202.0.x).
# No route leads anywhere else; nothing here touches another namespace.
#   usage: up.sh NAME FOLDER        (then down.sh NAME)
set -eu
name=$1
folder=$2
here=$(dirname "$0")
mkdir -p "$folder/www"

# A CA and a server certificate for every name, made here (openssl req/x509, as any
# private CA is made); the desk is told to trust the CA through SSL_CERT_FILE and
# GIT_SSL_CAINFO.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=deskd egress test CA" \
  -keyout "$folder/ca.key" -out "$folder/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=www.egress.test" \
  -keyout "$folder/server.key" -out "$folder/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:www.egress.test,DNS:*.svc.egress.test,DNS:other.egress.test,DNS:rebind.egress.test,DNS:inside.egress.test\n' \
  > "$folder/san.ext"
openssl x509 -req -in "$folder/server.csr" -CA "$folder/ca.pem" -CAkey "$folder/ca.key" -CAcreateserial \
  -days 2 -extfile "$folder/san.ext" -out "$folder/server.pem" 2>/dev/null
chmod 644 "$folder/ca.pem"

# A bare repository served as plain files (git's dumb HTTP protocol).
git init -q --bare "$folder/www/repo.git"
git init -q "$folder/work"
git -C "$folder/work" -c user.name=t -c user.email=t@egress.test commit -q --allow-empty -m first
git -C "$folder/work" push -q "$folder/www/repo.git" HEAD:refs/heads/main
git -C "$folder/www/repo.git" update-server-info

# A simple package index (PEP 503) holding one tiny wheel, for pip: made here with
# zipfile, as any wheel is a zip with its dist-info (PEP 427).
python3 - "$folder/www" <<'PYTHON'
import base64, hashlib, os, sys, zipfile
www = sys.argv[1]
files = {
    "tinypkg/__init__.py": b"GREETING = 'tinypkg from the small internet'\n",
    "tinypkg-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n",
    "tinypkg-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: up.sh\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += "%s,sha256=%s,%d\n" % (path, digest, len(data))
record += "tinypkg-0.1.dist-info/RECORD,,\n"
os.makedirs(os.path.join(www, "packages"))
os.makedirs(os.path.join(www, "simple", "tinypkg"))
wheel = os.path.join(www, "packages", "tinypkg-0.1-py3-none-any.whl")
with zipfile.ZipFile(wheel, "w") as archive:
    for path, data in files.items():
        archive.writestr(path, data)
    archive.writestr("tinypkg-0.1.dist-info/RECORD", record)
with open(wheel, "rb") as built:
    sha = hashlib.sha256(built.read()).hexdigest()
with open(os.path.join(www, "simple", "tinypkg", "index.html"), "w") as index:
    index.write('<html><body><a href="../../packages/tinypkg-0.1-py3-none-any.whl#sha256=%s">'
                'tinypkg-0.1-py3-none-any.whl</a></body></html>\n' % sha)
PYTHON

ip netns add "$name"
ip link add "${name}a" type veth peer name "${name}b"
ip link set "${name}b" netns "$name"
ip addr add 10.201.0.1/24 dev "${name}a"
ip addr add 10.202.0.1/24 dev "${name}a"
ip link set "${name}a" up
ip link set lo up
ip netns exec "$name" sh -eu -c "
  ip link set lo up
  for address in 10.201.0.10 10.201.0.11 10.201.0.12 10.201.0.53 10.202.0.10 10.202.0.12; do
    ip addr add \$address/16 dev ${name}b
  done
  ip link set ${name}b up"
ip netns exec "$name" python3 "$here/servers.py" "$folder" </dev/null >"$folder/servers.log" 2>&1 &
echo $! > "$folder/servers.pid"
for _ in $(seq 100); do
  [ -e "$folder/servers.ready" ] && exit 0
  sleep 0.1
done
echo "up.sh: the servers did not start:" >&2
cat "$folder/servers.log" >&2
exit 1
