// Checks images/kubernetes/ offline: renders the Kustomize base as kubectl would (it holds
// plain resources only), validates every document against the Kubernetes API's OpenAPI
// schema (kubernetes-models: its validators are generated from the official schema) and
// refuses fields the schema does not know, then checks what deskd's pods must hold: the
// sandbox's needs (hostUsers: false, procMount: Unmasked, the image's Localhost seccomp
// profile), no privilege, probes and a preStop that ask deskd's socket, a grace period
// that covers the turns', one parseable deskd.toml per shard, and a DaemonSet that puts
// the image's /usr/share/deskd/seccomp.json on the nodes. Finally it checks that the image
// installs images/seccomp.json there, in a form every container runtime reads alike.
//
//   node validate.mjs REPOSITORY NODE_MODULES
//
// validate.sh installs NODE_MODULES (kubernetes-models, yaml, smol-toml) and runs this.
// Prints "ok: ..." or "FAIL: ..." per check and "N passed, M failed" last; exits 1 on any
// failure.
import { readFileSync, existsSync, statSync } from "node:fs";
import { join, posix } from "node:path";
import { pathToFileURL } from "node:url";

const [repository, nodeModules] = process.argv.slice(2);
if (!repository || !nodeModules) {
  console.error("usage: node validate.mjs REPOSITORY NODE_MODULES");
  process.exit(2);
}
const lib = (file) => import(pathToFileURL(join(nodeModules, file)).href);
const YAML = await lib("yaml/dist/index.js");
const TOML = await lib("smol-toml/dist/index.js");

const base = join(repository, "images/kubernetes");
let passed = 0;
let failed = 0;
const ok = (what) => { passed++; console.log(`ok: ${what}`); };
const fail = (what) => { failed++; console.log(`FAIL: ${what}`); };
const check = (condition, what, why = "") => (condition ? ok(what) : fail(why ? `${what}: ${why}` : what));
const show = (value) => JSON.stringify(value);

// ---- Rendering: kustomization.yaml's resources, in order -------------------------------

const documents = []; // {where, object}
function render() {
  const kustomizationPath = join(base, "kustomization.yaml");
  const kustomization = YAML.parse(readFileSync(kustomizationPath, "utf8"));
  const allowed = new Set(["apiVersion", "kind", "resources"]);
  const others = Object.keys(kustomization ?? {}).filter((key) => !allowed.has(key));
  check(kustomization?.kind === "Kustomization" && others.length === 0,
        "kustomization.yaml is a Kustomization of plain resources, which this check renders as kubectl would",
        `it also has ${others.join(", ") || "no kind: Kustomization"}; teach validate.mjs to render that first`);
  for (const resource of kustomization?.resources ?? []) {
    const path = join(base, resource);
    if (resource.includes("://") || !existsSync(path) || !statSync(path).isFile()) {
      fail(`kustomization.yaml: resource ${resource} is not a file beside it`);
      continue;
    }
    const parsed = YAML.parseAllDocuments(readFileSync(path, "utf8"), { prettyErrors: true });
    parsed.forEach((document, index) => {
      const where = `${resource} document ${index + 1}`;
      if (document.errors.length > 0) {
        fail(`${where}: not YAML: ${document.errors.map((error) => error.message).join("; ")}`);
        return;
      }
      const object = document.toJS();
      if (object === null || object === undefined) return; // an empty document, as kubectl skips
      documents.push({ where: `${where} (${object.kind} ${object.metadata?.name})`, object });
    });
  }
  check(documents.length > 0, `the base renders to ${documents.length} documents`);
}

// ---- The API schema ----------------------------------------------------------------------

// Wraps a document so that every field the schema's validator reads is recorded: a field
// it never read is one the schema does not have (the API server refuses those with
// kubectl's default --validate=strict; the OpenAPI schema alone would let them pass).
function recording(root) {
  const objects = []; // {path, target, read}
  const proxies = new WeakMap();
  const wrap = (target, path) => {
    if (target === null || typeof target !== "object") return target;
    if (proxies.has(target)) return proxies.get(target);
    const read = new Set();
    objects.push({ path, target, read });
    const proxy = new Proxy(target, {
      get(object, key, receiver) {
        const value = Reflect.get(object, key, receiver);
        if (typeof key !== "string") return value;
        read.add(key);
        return Object.hasOwn(object, key) ? wrap(value, Array.isArray(object) ? `${path}[${key}]` : `${path}.${key}`) : value;
      },
    });
    proxies.set(target, proxy);
    return proxy;
  };
  const proxy = wrap(root, "");
  const unknown = () => objects.filter(({ target }) => !Array.isArray(target))
    .flatMap(({ path, target, read }) => Object.keys(target).filter((key) => !read.has(key)).map((key) => `${path}.${key}`.slice(1)));
  return { proxy, unknown };
}

async function validateSchema({ where, object }) {
  const { apiVersion, kind } = object;
  let model;
  try {
    // kubernetes-models keeps each kind at <apiVersion>/<Kind>.js: v1/Service, apps/v1/StatefulSet.
    model = (await lib(`kubernetes-models/${apiVersion}/${kind}.js`))[kind];
  } catch {
    model = undefined;
  }
  if (typeof model !== "function") {
    fail(`${where}: the Kubernetes API has no ${kind} in ${apiVersion}`);
    return;
  }
  const { proxy, unknown } = recording(structuredClone(object));
  try {
    model.prototype.validate.call(proxy);
  } catch (error) {
    fail(`${where}: schema: ${error.message}`);
    return;
  }
  const extra = unknown();
  check(extra.length === 0, `${where} matches the ${apiVersion} ${kind} schema`,
        `fields the schema does not have: ${extra.join(", ")}`);
}

// The schema's own knowledge of the fields deskd's pods depend on: an older schema would
// let a misspelt or misplaced hostUsers or procMount pass.
async function schemaKnowsTheFields() {
  const { Pod } = await lib("kubernetes-models/v1/Pod.js");
  const pod = (spec) => ({ apiVersion: "v1", kind: "Pod", metadata: { name: "probe" },
                           spec: { containers: [{ name: "c", image: "i" }], ...spec } });
  const refuses = (object) => { try { new Pod(object).validate(); return false; } catch { return true; } };
  const knows = (spec, field) => {
    const { proxy, unknown } = recording(pod(spec));
    Pod.prototype.validate.call(proxy);
    return !unknown().includes(field);
  };
  check(knows({ hostUsers: false }, "spec.hostUsers") && refuses(pod({ hostUsers: "no" })),
        "the schema knows PodSpec.hostUsers (a boolean)");
  const unmasked = { containers: [{ name: "c", image: "i", securityContext: { procMount: "Unmasked" } }] };
  check(knows(unmasked, "spec.containers[0].securityContext.procMount") &&
        refuses(pod({ containers: [{ name: "c", image: "i", securityContext: { procMount: "Open" } }] })),
        "the schema knows SecurityContext.procMount (Default or Unmasked)");
}

// ---- What the API server checks beyond the schema, where these manifests could slip -----

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const allContainers = (pod) => [...(pod.initContainers ?? []), ...(pod.containers ?? [])];

function apiRules({ where, object }) {
  const name = object.metadata?.name ?? "";
  check(dnsSubdomain.test(name) && name.length <= 253, `${where}: a valid name`);
  const template = object.spec?.template;
  if (!template) return;
  const pod = template.spec;
  const selector = object.spec.selector?.matchLabels ?? {};
  const labels = template.metadata?.labels ?? {};
  check(Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels[key] === value),
        `${where}: the selector matches the pod template's labels`);
  const volumes = new Set([...(pod.volumes ?? []).map((volume) => volume.name),
                           ...(object.spec.volumeClaimTemplates ?? []).map((claim) => claim.metadata.name)]);
  for (const container of allContainers(pod)) {
    check(dnsLabel.test(container.name), `${where}: container ${container.name}: a valid name`);
    const missing = (container.volumeMounts ?? []).filter((mount) => !volumes.has(mount.name)).map((mount) => mount.name);
    check(missing.length === 0, `${where}: container ${container.name}: every volumeMount names a volume`, missing.join(", "));
    const defined = new Set((container.env ?? []).map((variable) => variable.name));
    const used = [...(container.command ?? []), ...(container.args ?? [])].join(" ").match(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g) ?? [];
    const undefinedVariables = used.map((reference) => reference.slice(2, -1)).filter((variable) => !defined.has(variable));
    check(undefinedVariables.length === 0, `${where}: container ${container.name}: every $(VAR) in its command is in its env`,
          undefinedVariables.join(", "));
    if (container.securityContext?.procMount === "Unmasked") {
      // The API server: "`hostUsers` must be false to use `Unmasked`".
      check(pod.hostUsers === false, `${where}: container ${container.name}: procMount Unmasked with hostUsers: false, as the API requires`);
    }
  }
}

// ---- deskd's pods ------------------------------------------------------------------------

const find = (kind, name) => documents.filter(({ object }) => object.kind === kind && (!name || object.metadata?.name === name));

function effective(pod, container, field) {
  return container.securityContext?.[field] ?? pod.securityContext?.[field];
}

function noPrivilege(where, pod, container, { nonRoot = true } = {}) {
  const context = container.securityContext ?? {};
  const label = `${where}: container ${container.name}`;
  check(context.allowPrivilegeEscalation === false, `${label}: allowPrivilegeEscalation: false`);
  check(context.readOnlyRootFilesystem === true, `${label}: readOnlyRootFilesystem: true`);
  check((context.capabilities?.drop ?? []).includes("ALL") && (context.capabilities?.add ?? []).length === 0,
        `${label}: capabilities: drop [ALL], add none`);
  check(context.privileged !== true, `${label}: not privileged`);
  if (nonRoot) {
    const uid = effective(pod, container, "runAsUser");
    check(effective(pod, container, "runAsNonRoot") === true && Number.isInteger(uid) && uid > 0,
          `${label}: runAsNonRoot with a numeric non-root runAsUser (${uid}), which the kubelet can verify`);
  }
}

// `deskctl --socket SOCKET desks`, as the probes and the preStop hook run it.
function asksDeskctl(command, socket) {
  const text = (command ?? []).join(" ");
  return /(^|\/)deskctl$/.test((command ?? [])[0] ?? "") && text.includes(`--socket ${socket}`) && / desks$/.test(text);
}

function shardConfigs(statefulSet, replicas) {
  const pod = statefulSet.object.spec.template.spec;
  const deskd = pod.containers.find((container) => container.name === "deskd");
  const configMount = deskd?.volumeMounts?.find((mount) => mount.name === "config");
  const configVolume = pod.volumes?.find((volume) => volume.name === "config");
  const sources = configVolume?.projected?.sources ?? [];
  const shards = [];
  const desksSeen = new Map();
  for (let index = 0; index < replicas; index++) {
    const name = `deskd-shard-${index}`;
    const [configMap] = find("ConfigMap", name);
    if (!configMap) {
      fail(`ConfigMap ${name} (shard ${index} of ${replicas} replicas) is in the base`);
      continue;
    }
    const source = sources.find((entry) => entry.configMap?.name === name);
    const item = source?.configMap?.items?.find((entry) => entry.key === "deskd.toml");
    check(item?.path === `shard-${index}.toml` && configMount?.mountPath === "/etc/deskd",
          `${name}'s deskd.toml is /etc/deskd/shard-${index}.toml in pod deskd-${index}`,
          `source ${show(source)}, mount ${show(configMount)}`);
    const text = configMap.object.data?.["deskd.toml"];
    let config;
    try {
      config = TOML.parse(text ?? "");
      ok(`${configMap.where}: deskd.toml is TOML`);
    } catch (error) {
      const at = error.line ? ` at deskd.toml:${error.line}:${error.column}` : "";
      fail(`${configMap.where}: deskd.toml is not TOML${at}: ${error.message.split("\n")[0]}`);
      continue;
    }
    const runner = config.runner ?? {};
    const grace = runner.shutdown_grace_seconds ?? 10; // deskd's default
    check(typeof grace === "number", `${name}: shutdown_grace_seconds is a number (${grace})`);
    check(typeof runner.state_folder === "string" && runner.state_folder.startsWith("/var/lib/deskd/"),
          `${name}: the state folder is on the PVC (${runner.state_folder})`);
    check(typeof runner.socket === "string" && posix.dirname(runner.socket) === "/run/deskd",
          `${name}: the socket is in the /run/deskd emptyDir (${runner.socket})`);
    const quotas = [config.sandbox?.disk_quota_mb, ...(config.desk ?? []).map((desk) => desk.sandbox?.disk_quota_mb)];
    check(quotas[0] === "none" && quotas.every((quota) => quota === undefined || quota === "none"),
          `${name}: disk_quota_mb = "none" (an unprivileged deskd cannot mount quota images)`, show(quotas));
    const desks = config.desk ?? [];
    check(desks.length > 0, `${name}: has desks (${desks.map((desk) => desk.name).join(", ")})`);
    for (const desk of desks) {
      // The init container makes /var/lib/deskd/desks/NAME folders only.
      check(/^\/var\/lib\/deskd\/desks\/[^/]+$/.test(desk.directory ?? ""),
            `${name}: desk ${desk.name}'s folder is a folder of /var/lib/deskd/desks/ on the PVC (${desk.directory})`);
      check(!desksSeen.has(desk.name), `${name}: desk ${desk.name} is in no other shard`, `also in ${desksSeen.get(desk.name)}`);
      desksSeen.set(desk.name, name);
    }
    shards.push({ name, runner, grace });
  }
  const extra = find("ConfigMap").map(({ object }) => object.metadata.name)
    .filter((name) => /^deskd-shard-\d+$/.test(name) && Number(name.split("-").pop()) >= replicas);
  check(extra.length === 0, `no shard ConfigMap without its replica`, extra.join(", "));
  return shards;
}

function checkStatefulSet(version) {
  const sets = find("StatefulSet", "deskd");
  if (sets.length !== 1) {
    fail(`one StatefulSet deskd in the base (found ${sets.length})`);
    return undefined;
  }
  const [statefulSet] = sets;
  const { where } = statefulSet;
  const spec = statefulSet.object.spec;
  const pod = spec.template.spec;
  const deskd = pod.containers.find((container) => container.name === "deskd");
  if (!deskd) {
    fail(`${where}: a container named deskd`);
    return undefined;
  }
  const replicas = spec.replicas ?? 1;
  const [service] = find("Service", spec.serviceName);
  check(service?.object.spec?.clusterIP === "None" &&
        Object.entries(service.object.spec.selector ?? {}).every(([key, value]) => spec.template.metadata.labels[key] === value),
        `${where}: serviceName ${spec.serviceName} is a headless Service of the base that selects the shards`);
  check(pod.hostUsers === false, `${where}: hostUsers: false (the pod is a user namespace of its own)`);
  check(deskd.securityContext?.procMount === "Unmasked", `${where}: the deskd container has procMount: Unmasked`);
  for (const container of allContainers(pod)) {
    const profile = container.securityContext?.seccompProfile ?? pod.securityContext?.seccompProfile;
    check(profile?.type === "Localhost" && profile.localhostProfile === "deskd/seccomp.json",
          `${where}: container ${container.name} runs under the Localhost seccomp profile deskd/seccomp.json`, show(profile));
    noPrivilege(where, pod, container);
    check(container.image === `localhost/deskd:${version}`, `${where}: container ${container.name} runs localhost/deskd:${version}`,
          container.image);
    const tmp = (container.volumeMounts ?? []).find((mount) => mount.mountPath === "/tmp");
    check(pod.volumes?.find((volume) => volume.name === tmp?.name)?.emptyDir !== undefined,
          `${where}: container ${container.name} has an emptyDir /tmp (its root file system is read-only)`);
  }
  check(pod.automountServiceAccountToken === false, `${where}: no service account token in the pod`);

  const shards = shardConfigs(statefulSet, replicas);
  const sockets = [...new Set(shards.map((shard) => shard.runner.socket))];
  const socket = sockets.length === 1 ? sockets[0] : "/run/deskd/deskd.sock";
  check(sockets.length === 1, `every shard's socket is ${socket}`, sockets.join(", "));
  const runMount = (deskd.volumeMounts ?? []).find((mount) => mount.mountPath === posix.dirname(socket));
  check(pod.volumes?.find((volume) => volume.name === runMount?.name)?.emptyDir !== undefined,
        `${where}: ${posix.dirname(socket)} is an emptyDir`);
  const stateMount = (deskd.volumeMounts ?? []).find((mount) => mount.mountPath === "/var/lib/deskd");
  check((spec.volumeClaimTemplates ?? []).some((claim) => claim.metadata.name === stateMount?.name),
        `${where}: /var/lib/deskd is each pod's PersistentVolumeClaim (volumeClaimTemplates)`);

  const env = Object.fromEntries((deskd.env ?? []).map((variable) => [variable.name, variable]));
  check(show(deskd.command) === show(["/usr/sbin/deskd", "serve", "--config", "/etc/deskd/shard-$(POD_INDEX).toml"]) &&
        env.POD_INDEX?.valueFrom?.fieldRef?.fieldPath === "metadata.labels['apps.kubernetes.io/pod-index']",
        `${where}: pod deskd-N serves /etc/deskd/shard-N.toml (N from the apps.kubernetes.io/pod-index label)`);
  for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) {
    check(asksDeskctl(deskd[probe]?.exec?.command, socket), `${where}: ${probe} runs deskctl --socket ${socket} desks`,
          show(deskd[probe]));
  }
  const preStop = deskd.lifecycle?.preStop?.exec?.command;
  check(Array.isArray(preStop) && preStop.join(" ").includes("deskctl") && preStop.join(" ").includes(socket),
        `${where}: a preStop hook that asks deskd (${socket}) for running turns`);
  const wait = Number(env.PRESTOP_TURN_WAIT_SECONDS?.value ?? NaN);
  const grace = Math.max(...shards.map((shard) => shard.grace));
  const termination = pod.terminationGracePeriodSeconds ?? 30;
  check(Number.isFinite(wait) && preStop?.join(" ").includes("PRESTOP_TURN_WAIT_SECONDS"),
        `${where}: the preStop hook waits at most PRESTOP_TURN_WAIT_SECONDS (${wait})`);
  check(termination > grace, `${where}: terminationGracePeriodSeconds ${termination} > every shard's shutdown_grace_seconds (${grace})`);
  check(termination >= wait + grace + 10,
        `${where}: terminationGracePeriodSeconds ${termination} covers the preStop wait (${wait}) + shutdown_grace_seconds (${grace}) + 10 s`);
  return statefulSet;
}

function checkSeccompDaemonSet(statefulSet, version) {
  const sets = find("DaemonSet", "deskd-seccomp");
  if (sets.length !== 1) {
    fail(`one DaemonSet deskd-seccomp in the base (found ${sets.length})`);
    return;
  }
  const [{ where, object }] = sets;
  const pod = object.spec.template.spec;
  const hostPaths = new Map((pod.volumes ?? []).filter((volume) => volume.hostPath).map((volume) => [volume.name, volume.hostPath.path]));
  const profile = statefulSet?.object.spec.template.spec.securityContext?.seccompProfile?.localhostProfile ?? "deskd/seccomp.json";
  const target = `/var/lib/kubelet/seccomp/${profile}`;
  const copiers = (pod.initContainers ?? []).filter((container) => {
    const mount = (container.volumeMounts ?? []).find((entry) => hostPaths.get(entry.name) === posix.dirname(target));
    const script = (container.command ?? []).join(" ");
    return mount && script.includes("/usr/share/deskd/seccomp.json") && script.includes(`${mount.mountPath}/${posix.basename(target)}`);
  });
  check(copiers.length === 1, `${where}: an init container copies the image's /usr/share/deskd/seccomp.json to the node's ${target}`);
  for (const container of pod.containers ?? []) {
    const mounts = (container.volumeMounts ?? []).filter((mount) => hostPaths.has(mount.name));
    check(mounts.length === 0, `${where}: container ${container.name}, which stays running, mounts no hostPath`);
  }
  check([...hostPaths.values()].every((path) => path === posix.dirname(target)),
        `${where}: its only hostPath is ${posix.dirname(target)}`, [...hostPaths.values()].join(", "));
  check(pod.hostUsers !== false, `${where}: in the node's user namespace, so it can write the kubelet's folder`);
  for (const container of allContainers(pod)) {
    noPrivilege(where, pod, container, { nonRoot: !copiers.includes(container) });
    check(container.image === `localhost/deskd:${version}`, `${where}: container ${container.name} runs the shards' image`, container.image);
  }
  check(pod.automountServiceAccountToken === false, `${where}: no service account token in the pod`);
}

// ---- The profile itself, and the image that ships it ----------------------------------

function checkProfileAndImage() {
  const profilePath = join(repository, "images/seccomp.json");
  let profile;
  try {
    profile = JSON.parse(readFileSync(profilePath, "utf8"));
    ok("images/seccomp.json is JSON");
  } catch (error) {
    fail(`images/seccomp.json: ${error.message}`);
    return;
  }
  check(typeof profile.defaultAction === "string" && Array.isArray(profile.syscalls) &&
        profile.syscalls.every((rule) => Array.isArray(rule.names) && typeof rule.action === "string"),
        "images/seccomp.json is a seccomp profile (defaultAction, syscalls with names and an action)");
  // containerd reads a Localhost profile as an OCI runtime-spec LinuxSeccomp: it drops
  // Docker's per-rule conditions (includes/excludes) and archMap. A condition on the
  // architecture changes nothing there (a call another architecture lacks is skipped by
  // name), but one on capabilities or the kernel version does: the rule applies always, and
  // of an allow and an errno rule for the same call the first wins. Podman (the image
  // test) and CRI-O evaluate them. One file is one filter everywhere only without them.
  const conditional = profile.syscalls.filter((rule) => ["includes", "excludes"].some((side) =>
    rule[side]?.caps?.length > 0 || rule[side]?.minKernel !== undefined));
  const calls = [...new Set(conditional.flatMap((rule) => rule.names))].sort();
  check(conditional.length === 0,
        "images/seccomp.json has no rules that depend on capabilities or the kernel version, so containerd, " +
        "CRI-O and Podman make the same filter of it",
        `${conditional.length} rules do, for ${calls.join(", ")}: containerd ignores those conditions, so in a pod ` +
        "these calls get the first rule's action (allow), not what the image test's Podman decided; " +
        "resolve them in the file for deskd's case (no capabilities)");

  const containerfilePath = join(repository, "images/Containerfile");
  if (!existsSync(containerfilePath)) {
    fail("images/Containerfile exists (the image that ships the profile)");
    return;
  }
  const containerfile = readFileSync(containerfilePath, "utf8");
  check(/^\s*(COPY|ADD)\s+(--\S+\s+)*(\.\/)?seccomp\.json\s+\/usr\/share\/deskd\/seccomp\.json\s*$/m.test(containerfile),
        "images/Containerfile installs seccomp.json (images/seccomp.json, beside it) as /usr/share/deskd/seccomp.json");
  const user = containerfile.match(/^\s*USER\s+(\S+)/m)?.[1];
  const [statefulSet] = find("StatefulSet", "deskd");
  const uid = statefulSet?.object.spec.template.spec.securityContext?.runAsUser;
  if (user && /^\d+(:\d+)?$/.test(user)) {
    check(Number(user.split(":")[0]) === uid, `the image's USER ${user} is the shards' runAsUser ${uid}`);
  } else {
    console.log(`note: the image's USER is ${user ?? "unset"}, a name: the shards' runAsUser ${uid} must be its uid ` +
                "(the Containerfile should fix it)");
  }
  const imageScript = join(repository, "scripts/image");
  if (existsSync(imageScript)) {
    check(/images\/seccomp\.json/.test(readFileSync(imageScript, "utf8")),
          "scripts/image builds the image from images/seccomp.json (the profile the image test runs under)");
  }
}

// ---- Run ---------------------------------------------------------------------------------

const cmake = readFileSync(join(repository, "CMakeLists.txt"), "utf8");
const version = cmake.match(/project\(deskd VERSION ([0-9.]+)/)?.[1] ?? "unknown";
const modelsVersion = JSON.parse(readFileSync(join(nodeModules, "kubernetes-models/package.json"), "utf8")).version;
console.log(`validating images/kubernetes/ for deskd ${version} with kubernetes-models ${modelsVersion}`);

render();
await schemaKnowsTheFields();
for (const document of documents) {
  await validateSchema(document);
  apiRules(document);
}
const seen = new Map();
const twice = [];
for (const { where, object } of documents) {
  const key = `${object.kind} ${object.metadata?.name}`;
  if (seen.has(key)) twice.push(`${where} and ${seen.get(key)}`);
  seen.set(key, where);
}
check(twice.length === 0, "no two documents are the same object", twice.join("; "));
const statefulSet = checkStatefulSet(version);
checkSeccompDaemonSet(statefulSet, version);
checkProfileAndImage();

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
