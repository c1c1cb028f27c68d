export { type StoreCredentials } from './kubernetes/credentials.js';
export { isDns1035Label, K8S_NAME_MAX, k8sName, STATEFULSET_NAME_MAX } from './kubernetes/k8s-name.js';
export {
  ownConfigNames,
  podPolicyViolations,
  RELAXABLE_VOLUME_TYPES,
  type PodPolicy,
  type PodPolicyViolation,
  type RelaxableVolumeType,
} from './kubernetes/pod-policy.js';
export { cpuQuantity, memoryQuantity, storageQuantity } from './kubernetes/quantities.js';
export {
  DEFAULT_STORE_IMAGES,
  objectNames,
  renderManifests,
  SERVER_PORT,
  withoutSecretData,
  type ObjectNames,
  type RenderedObject,
  type RenderInput,
  type StoreImages,
} from './kubernetes/render.js';
export {
  CATATONIT,
  containerId,
  ContainerInstances,
  type ContainerImage,
  type ContainerLaunch,
} from './container/container-instances.js';
export {
  cleanToolError,
  ImageCache,
  repositoryOf,
  type CachedImage,
  type ImageCacheOptions,
  type ImageSource,
  type UnpackMeasure,
} from './container/image-cache.js';
export { ImageTooLargeError, unpackedSize, type UnpackBound } from './container/image-size.js';
export { containerStartFailure } from './container/start-failure.js';
export {
  AGENT_SERVER_LABEL,
  ImageError,
  imageAgentServer,
  layoutManifestDigest,
  readImageConfig,
  type ImageConfig,
} from './container/image-config.js';
export { INIT_PATH, MAX_OPEN_FILES, ociConfig, type ContainerSpec } from './container/oci-spec.js';
export { Runc } from './container/runc.js';
export { ArtifactError, parseEnvFile, readArtifact, type Artifact } from './process/artifact.js';
export { probeHealth, waitHealthy, type HealthOutcome } from './process/health.js';
export { groupMembers, isProcessAlive, stopProcessGroup } from './process/os-process.js';
export { isPortFree, pickFreePort } from './process/ports.js';
export { instanceEnvironment, tracingEnvironment } from './process/instance-environment.js';
export { lastLines } from './process/instance-log.js';
export { instanceLabel, type LaunchedInstance, type LaunchSpec } from './process/instance-launch.js';
export { PortsExhaustedError, ProcessRuntime, type ProcessRuntimeOptions } from './process/process-runtime.js';
export {
  ProcessStore,
  type DeploymentRuntimeWrites,
  type InstanceRecord,
  type InstanceRole,
  type InstanceSample,
  type InstanceStatus,
  type Queryable,
} from './process/process-store.js';
export {
  ServingProxy,
  type AccessDenial,
  type ProxyTarget,
  type RequestOutcome,
  type ServingProxyOptions,
} from './process/serving-proxy.js';
export {
  answerDenial,
  forwardHeaders,
  hostLines,
  REQUEST_RECEIVE_MS,
  refuseTarget,
  type HeaderEdits,
} from './process/forwarding.js';
export { clientAddress, EDGE_CLIENT_HEADER, EDGE_TOKEN_HEADER } from './process/edge-client.js';
export { forwardRequest } from './process/forward-request.js';
export { forwardUpgrade, refuseUpgrade } from './process/forward-upgrade.js';
export { UpstreamPool } from './process/upstream-pool.js';
export type {
  InstanceHealth,
  RuntimeDriver,
  RuntimeInstance,
  StartInstancesInput,
  StartInstancesOptions,
  StartInstancesOutcome,
  TrafficSwitch,
} from './driver.js';
export {
  CgroupWriter,
  detectCgroups,
  type Cgroup,
  type CgroupLayout,
  type CgroupLimits,
  type CgroupUsage,
} from './sandbox/cgroups.js';
export {
  SANDBOX_PATHS,
  sandboxCommand,
  sandboxEnvironment,
  type Mount,
  type SandboxCommandSpec,
} from './sandbox/command.js';
export {
  handOverSeccomp,
  ociSeccomp,
  SANDBOX_SECCOMP_POLICY,
  sandboxSeccompBpf,
  SECCOMP_FD,
  seccompBpf,
  seccompProgram,
  type OciSeccomp,
  type SeccompRule,
} from './sandbox/seccomp.js';
export { pickUid, SandboxIdentities, UidsExhaustedError } from './sandbox/identities.js';
export { DnsRelay, resolversOf } from './sandbox/net/dns-relay.js';
export { DENIED_RANGES, egressRules, NFT_TABLE } from './sandbox/net/egress-rules.js';
export { parsePool, slotAddresses, type Pool } from './sandbox/net/pool.js';
export {
  removeSandboxPool,
  SandboxNetwork,
  storeAddresses,
  type SandboxAttachment,
} from './sandbox/net/sandbox-network.js';
export {
  Sandbox,
  sandboxForStart,
  SandboxUnavailableError,
  setUpSandbox,
  type SandboxSettings,
} from './sandbox/sandbox.js';
export type { LoopbackFront, Upstream } from './data-access/loopback-front.js';
export { TcpRelay } from './data-access/tcp-relay.js';
export { PostgresFront, startupMessage, type PostgresFrontOptions } from './data-access/postgres-front.js';
export { RedisFront, type RedisFrontOptions } from './data-access/redis-front.js';
export { RespRequestParser } from './data-access/resp-requests.js';
export {
  ALLOWED_REDIS_SUBCOMMANDS,
  DataAccessError,
  DENIED_REDIS_COMMANDS,
  deniedRedisCommand,
  DEPLOYMENT_REDIS_DB,
  deploymentKeyspaceUrl,
  deploymentRedisUser,
  dropDeploymentRedisUser,
  ensureDeploymentRedisUser,
  redisHasAcl,
  removeDeploymentRedisKeys,
} from './data-access/redis-acl.js';
export { activeFronts, probeLocalTrust, type LocalTrustReport } from './data-access/trust-probe.js';
