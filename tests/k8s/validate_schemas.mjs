// Validates every object of the rendered manifests (tests/k8s/golden/*.yaml,
// which check_render.sh keeps equal to `kubectl kustomize`) offline against
// the Kubernetes API schemas: built-in kinds with kubernetes-models, the
// ServiceMonitor with @kubernetes-models/prometheus-operator, and Multus'
// NetworkAttachmentDefinition with the small schema below (no package ships
// it). These schemas, like Kubernetes' own OpenAPI, do not forbid unknown
// fields: a misspelt optional field passes here and fails at
// `kubectl apply --validate=strict` on a cluster.
// Usage: node validate_schemas.mjs FILE.yaml...   (exit 0 valid, 1 invalid)
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parseAllDocuments } from "yaml";
import Ajv from "ajv";

const require = createRequire(import.meta.url);

// The model class of a kind (its validate() holds the schema).
async function loadModel(apiVersion, kind) {
  // The operator's models are ES modules exported per API version.
  if (apiVersion === "monitoring.coreos.com/v1")
    return (await import(`@kubernetes-models/prometheus-operator/${apiVersion}`))[kind];
  return require(`kubernetes-models/${apiVersion}/${kind}`)[kind];
}

// Multus NetworkAttachmentDefinition (k8s.cni.cncf.io/v1): spec.config is a
// CNI configuration as a JSON string; checked below to parse, with a
// cniVersion and a plugin type.
const nadSchema = {
  type: "object",
  required: ["apiVersion", "kind", "metadata", "spec"],
  additionalProperties: false,
  properties: {
    apiVersion: { const: "k8s.cni.cncf.io/v1" },
    kind: { const: "NetworkAttachmentDefinition" },
    metadata: {
      type: "object",
      required: ["name"],
      properties: {
        name: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", maxLength: 253 },
        namespace: { type: "string" },
        labels: { type: "object", additionalProperties: { type: "string" } },
        annotations: { type: "object", additionalProperties: { type: "string" } },
      },
    },
    spec: {
      type: "object",
      additionalProperties: false,
      properties: { config: { type: "string" } },
    },
  },
};
const cniSchema = {
  type: "object",
  required: ["cniVersion", "name"],
  properties: { cniVersion: { type: "string" }, name: { type: "string" }, type: { type: "string" }, plugins: { type: "array" } },
  anyOf: [{ required: ["type"] }, { required: ["plugins"] }],
};
const ajv = new Ajv({ allErrors: true });
const validateNad = ajv.compile(nadSchema);
const validateCni = ajv.compile(cniSchema);

async function check(obj) {
  if (obj.kind === "NetworkAttachmentDefinition") {
    if (!validateNad(obj)) return ajv.errorsText(validateNad.errors);
    if (obj.spec.config === undefined) return null;
    let cni;
    try {
      cni = JSON.parse(obj.spec.config);
    } catch (e) {
      return `spec.config is not JSON: ${e.message}`;
    }
    if (!validateCni(cni)) return "spec.config: " + ajv.errorsText(validateCni.errors);
    if (cni.name !== obj.metadata.name) return `spec.config: name ${cni.name} is not the object's name`;
    return null;
  }
  let Model;
  try {
    Model = await loadModel(obj.apiVersion, obj.kind);
    if (typeof Model !== "function") throw new Error("no model");
  } catch {
    return `no schema for ${obj.apiVersion} ${obj.kind}`;  // an unknown kind fails, never passes unchecked
  }
  try {
    new Model(obj).validate();
    return null;
  } catch (e) {
    return e.message;
  }
}

// The validator must reject known-bad objects, or a pass means nothing.
const broken = [
  { apiVersion: "apps/v1", kind: "StatefulSet", metadata: { name: "x" }, spec: { template: {}, selector: {}, replicas: "two" } },
  { apiVersion: "v1", kind: "Service", metadata: { name: "x" }, spec: { ports: [{ port: "grpc" }] } },
  { apiVersion: "k8s.cni.cncf.io/v1", kind: "NetworkAttachmentDefinition", metadata: { name: "x" }, spec: { config: "{" } },
  { apiVersion: "monitoring.coreos.com/v1", kind: "ServiceMonitor", metadata: { name: "x" }, spec: { endpoints: "metrics" } },
];
for (const b of broken)
  if ((await check(b)) === null) {
    console.error(`FAIL: the validator accepted a broken ${b.kind}`);
    process.exit(1);
  }

let failures = 0, objects = 0;
const kinds = new Map();
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) {
      console.error(`FAIL: ${file}: ${doc.errors[0].message}`);
      failures++;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null) continue;
    objects++;
    kinds.set(obj.kind, (kinds.get(obj.kind) || 0) + 1);
    const err = await check(obj);
    if (err) {
      console.error(`FAIL: ${file}: ${obj.kind}/${obj.metadata?.name}: ${err}`);
      failures++;
    }
  }
}
console.log(`${objects} objects in ${process.argv.length - 2} files: ${[...kinds].map(([k, n]) => `${n} ${k}`).join(", ")}`);
console.log(failures ? `${failures} invalid` : "all valid");
process.exit(failures || objects === 0 ? 1 : 0);
