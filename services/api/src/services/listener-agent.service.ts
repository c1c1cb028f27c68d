import { ingestCredential, type SecretsCodec } from '@slipway/crypto';
import {
  Deployment,
  DeploymentCredentialStore,
  DeploymentRepository,
  Listener,
  ListenerRepository,
  Revision,
  transitionDeployment,
  type DataSource,
  type EntityManager,
} from '@slipway/db';
import {
  deploymentDatabaseName,
  ForbiddenError,
  NotFoundError,
  resolveResourceSpec,
  toStorableText,
  type DesiredDeployment,
  type DesiredState,
  type ListenerReport,
  type Rejection,
  type ReportLogLine,
  type ReportResult,
  type RevisionReport,
  type RevisionStatus,
} from '@slipway/domain';
import { redactValues } from '@slipway/logging';
import { RevisionLogRepository, RevisionReads, RevisionRepository, type RevisionFlow } from '@slipway/pipeline';
import { ListenerPoll, type ListenerGlance } from '../reads/listener-poll.js';
import {
  renderManifests,
  tracingEnvironment,
  withoutSecretData,
  type RenderInput,
  type StoreCredentials,
} from '@slipway/runtime';
import { podPolicyOf } from './pod-policy-check.js';
import type { Principal } from '../auth/principal.js';
import { matchesEtag, type DesiredStateCache } from './desired-state-cache.js';

export const OTHER_LISTENERS_KEY = 'This API key belongs to another listener.';
const DEFAULT_NAMESPACE = 'default';

type Outcome = { ok: true } | { ok: false; reason: string };
const rejected = (reason: string): Outcome => ({ ok: false, reason });

/**
 * The control plane's side of the listener agent protocol (docs/api.md, Listener agent protocol). The agent pulls what
 * its cluster should run and pushes back what happened; the control plane never connects to
 * the data plane. Every call is a check-in: it records `last_seen_at` and brings the
 * listener's deployments and rollouts back from UNKNOWN (where the reconciler put them while
 * the listener was silent).
 */
export class ListenerAgentService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly flow: RevisionFlow,
    /** Opens revisions' secrets and the deployments' sealed store passwords (DeploymentCredentialStore). */
    private readonly box: SecretsCodec,
    private readonly rendered: DesiredStateCache,
    /**
     * Where a listener's pods send their traces (the api's `/api/v1`: no trace front reaches a
     * cluster) and the key their trace-ingest credential is derived under; null: no tracing.
     */
    private readonly tracing: { apiUrl: string; secretsKey: Buffer } | null = null,
  ) {}

  // ---------------------------------------------------------------- desired state

  /**
   * One entry per deployment of the listener that has a revision DEPLOYING (apply it) or is
   * AWAITING_DELETE (remove it). Secret values of revisions being applied appear here and in
   * no other response.
   */
  async desiredState(
    agent: Principal,
    listenerId: string,
    ifNoneMatch?: string,
  ): Promise<{ etag: string; json: string | null }> {
    const { fingerprint } = await this.glance(agent, listenerId);
    const { etag, json } = this.rendered.find(listenerId, fingerprint) ?? (await this.render(agent, listenerId));
    return { etag, json: matchesEtag(ifNoneMatch, etag) ? null : this.view(listenerId, json) };
  }

  /** Reads the rows of the listener's desired state, renders its entries and keeps them (DesiredStateCache). */
  private async render(agent: Principal, listenerId: string) {
    const read = agent.workspaceId
      ? await new ListenerPoll(this.dataSource.manager).read(agent.workspaceId, listenerId)
      : null;
    if (!read) throw NotFoundError.of('Listener', listenerId); // deleted since the glance
    const { listener, work, fingerprint } = read;
    const store = new DeploymentCredentialStore(this.dataSource.manager, this.box);
    const entries: DesiredDeployment[] = [];
    for (const { deployment: d, deploying, active, sealed } of work) {
      // Opened only here: the fingerprint covers them sealed.
      const credentials = await store.openSealed(d.id, sealed);
      if (d.status === 'AWAITING_DELETE') {
        entries.push(this.deleteEntry(listener, d, active, credentials));
        continue;
      }
      const entry = deploying && this.applyEntry(listener, d, deploying, credentials);
      if (entry) entries.push(entry);
    }
    return this.rendered.keep(listenerId, fingerprint, entries);
  }

  /** The `DesiredState` answer, as JSON around the entries kept serialized (DesiredStateCache). */
  private view(listenerId: string, deploymentsJson: string): string {
    const envelope: Omit<DesiredState, 'deployments'> = {
      listener_id: listenerId,
      generated_at: new Date().toISOString(),
    };
    return `${JSON.stringify(envelope).slice(0, -1)},"deployments":${deploymentsJson}}`;
  }

  private applyEntry(
    listener: Listener,
    d: Deployment,
    revision: Revision,
    credentials: StoreCredentials,
  ): DesiredDeployment | null {
    const imageUri = revision.imageUri ?? revision.sourceRevisionConfig.image_uri ?? null;
    // Nothing to run: the rollout deadline fails such a revision; the agent cannot help.
    if (!imageUri) return null;
    const secrets = this.box.openSecrets(revision.secretsSealed, revision.id);
    return {
      deployment_id: d.id,
      name: d.name,
      namespace: namespaceOf(listener, d),
      revision_id: revision.id,
      action: 'apply',
      image_uri: imageUri,
      resource_spec: revision.resourceSpec,
      secrets: secrets.map(({ name, value }) => ({ name, value })),
      manifests: renderManifests(this.renderInput(listener, d, revision, imageUri, secrets, credentials)),
    };
  }

  /** What to remove: the objects of the revision that serves (Secrets without data), if any ever did. */
  private deleteEntry(
    listener: Listener,
    d: Deployment,
    active: Revision | null,
    credentials: StoreCredentials,
  ): DesiredDeployment {
    const imageUri = active ? (active.imageUri ?? active.sourceRevisionConfig.image_uri ?? null) : null;
    return {
      deployment_id: d.id,
      name: d.name,
      namespace: namespaceOf(listener, d),
      revision_id: active?.id ?? null,
      action: 'delete',
      image_uri: imageUri,
      resource_spec: active?.resourceSpec ?? null,
      secrets: [],
      manifests: active
        ? withoutSecretData(renderManifests(this.renderInput(listener, d, active, imageUri ?? '', [], credentials)))
        : [],
    };
  }

  private renderInput(
    listener: Listener,
    d: Deployment,
    revision: Revision,
    imageUri: string,
    secrets: RenderInput['secrets'],
    credentials: StoreCredentials,
  ): RenderInput {
    return {
      deploymentId: d.id,
      deploymentName: d.name,
      revisionId: revision.id,
      namespace: namespaceOf(listener, d),
      imageUri,
      // Resolved again so a snapshot written before a field existed still renders completely.
      resourceSpec: resolveResourceSpec(revision.resourceSpec, d.deploymentType),
      secrets,
      environment: this.tracing
        ? tracingEnvironment({
            secrets,
            enabled: d.sourceConfig.tracing ?? null,
            front: {
              endpoint: `${this.tracing.apiUrl}/api/v1`,
              apiKey: ingestCredential(this.tracing.secretsKey, d.id),
            },
            project: d.name,
            revisionId: revision.id,
          })
        : {},
      databaseName: d.databaseName ?? deploymentDatabaseName(d.name, d.id),
      credentials,
      customUrl: d.sourceConfig.custom_url ?? null,
      podPolicy: podPolicyOf(listener),
    };
  }

  // ---------------------------------------------------------------- reports

  /**
   * Applies what the agent reports. Each item runs in its own transaction: one deployment row
   * lock at a time (no lock-order deadlock with concurrent PATCHes or deletes), and a refused
   * item never undoes the others. Nothing the agent says is trusted beyond its own listener.
   */
  async report(agent: Principal, listenerId: string, body: ListenerReport): Promise<ReportResult> {
    await this.checkIn(agent, listenerId);
    const result: ReportResult = { applied: [], deleted: [], rejected: [] as Rejection[] };
    for (const item of body.revisions) {
      const outcome = await this.dataSource.transaction((m) => this.applyRevisionReport(m, listenerId, item));
      if (outcome.ok) result.applied.push(item.revision_id);
      else result.rejected.push({ revision_id: item.revision_id, reason: outcome.reason });
    }
    for (const [revisionId, lines] of groupBy(body.logs, (l) => l.revision_id)) {
      const outcome = await this.appendLogs(listenerId, revisionId, lines);
      if (!outcome.ok) result.rejected.push({ revision_id: revisionId, reason: outcome.reason });
    }
    for (const deploymentId of body.deleted_deployments) {
      const outcome = await this.dataSource.transaction((m) => this.finishTeardown(m, listenerId, deploymentId));
      if (outcome.ok) result.deleted.push(deploymentId);
      else result.rejected.push({ deployment_id: deploymentId, reason: outcome.reason });
    }
    return result;
  }

  private async applyRevisionReport(
    manager: EntityManager,
    listenerId: string,
    item: RevisionReport,
  ): Promise<Outcome> {
    const id = item.revision_id;
    const owner = await new RevisionReads(manager).listenerOwnerOf(id);
    // One answer for "unknown" and "someone else's": an agent learns nothing about other listeners.
    if (!owner || owner.listener_id !== listenerId) {
      return rejected(`Revision ID ${id} is not a revision of a deployment of listener ID ${listenerId}.`);
    }
    const message = this.statusMessage(item, () => this.box.openSecrets(owner.secrets_sealed, id).map((s) => s.value));

    // "Still deploying" while DEPLOYING is a heartbeat, not a transition: it records that the
    // agent is working on it. Conditional, so it never resurrects a finished revision. Under the
    // deployment lock, as the transition that may follow it in this transaction takes it.
    if (item.status === 'DEPLOYING') {
      await this.flow.lockDeployment(manager, owner.deployment_id);
      if ((await new RevisionRepository(manager).beat(id, ['DEPLOYING'])) !== 'moved-on') return { ok: true };
    }
    // A report of the end of the rollout ends its phase (as a placement's own would); "deploying"
    // from UNKNOWN is the listener picking the rollout up again.
    const applied =
      item.status === 'DEPLOYED'
        ? await this.flow.complete(manager, id, 'rollout', { message })
        : item.status === 'DEPLOY_FAILED'
          ? await this.flow.fail(manager, id, 'rollout', { message })
          : await this.flow.begin(manager, id, 'rollout', {
              from: ['AWAITING_DEPLOY', 'UNKNOWN'],
              message,
              set: { heartbeatAt: new Date() },
            });
    if (applied) return { ok: true };
    // The deployment row is locked by the attempt, so this is the status that refused it.
    const now = await new RevisionReads(manager).statusOf(id);
    return rejected(`Revision ID ${id} is ${now ?? 'gone'}; it cannot move to ${item.status}.`);
  }

  /**
   * Pod output the agent shipped, stored as the revision's `deploy` log lines. The agent
   * redacts already; the control plane redacts again with the revision's own secrets, because
   * an agent is not trusted with what reaches the API's readers (docs/api.md, Logs).
   */
  private async appendLogs(listenerId: string, revisionId: string, lines: ReportLogLine[]): Promise<Outcome> {
    const manager = this.dataSource.manager;
    const owner = await new RevisionReads(manager).listenerOwnerOf(revisionId);
    if (!owner || owner.listener_id !== listenerId) {
      return rejected(`Revision ID ${revisionId} is not a revision of a deployment of listener ID ${listenerId}.`);
    }
    const secretValues = this.box.openSecrets(owner.secrets_sealed, revisionId).map((s) => s.value);
    await new RevisionLogRepository(manager).append(
      revisionId,
      'deploy',
      lines.map((l) => ({ level: l.level, message: toStorableText(redactValues(l.message, secretValues)) })),
    );
    return { ok: true };
  }

  /**
   * The stored status_message: what the agent said, marked as coming from it, with every secret
   * value of the revision redacted (an agent's error text can quote the environment).
   */
  private statusMessage(item: RevisionReport, secretValues: () => string[]): string | null {
    const said = item.message?.trim();
    if (!said) return item.status === 'DEPLOY_FAILED' ? 'Listener reported a failed rollout without a message.' : null;
    return `Listener reported: ${redactValues(said, secretValues())}`;
  }

  /**
   * The agent removed a deleted deployment's objects: the row goes (its revisions cascade; the
   * tracing project survives, its foreign key is ON DELETE SET NULL), which ends the delete.
   */
  private async finishTeardown(manager: EntityManager, listenerId: string, deploymentId: string): Promise<Outcome> {
    const row = await new DeploymentRepository(manager).lock(deploymentId);
    if (!row || row.listenerId !== listenerId) {
      return rejected(`Deployment ID ${deploymentId} is not a deployment of listener ID ${listenerId}.`);
    }
    if (row.status !== 'AWAITING_DELETE') {
      return rejected(
        `Deployment ID ${deploymentId} is ${row.status}; only a deployment being deleted (AWAITING_DELETE) can finish its teardown.`,
      );
    }
    await new DeploymentRepository(manager).removeDeleted(deploymentId);
    return { ok: true };
  }

  // ---------------------------------------------------------------- check-in

  /** Authorizes the agent for this listener, then records that it called in (`revive`). */
  private async checkIn(agent: Principal, listenerId: string): Promise<Listener> {
    if (agent.listenerId !== listenerId) throw new ForbiddenError(OTHER_LISTENERS_KEY);
    const listener = agent.workspaceId
      ? await new ListenerRepository(this.dataSource.manager).find(agent.workspaceId, listenerId)
      : null;
    if (!listener) throw NotFoundError.of('Listener', listenerId);
    await this.revive(listenerId);
    return listener;
  }

  /**
   * The check-in of a desired-state poll, which also reads its rows' fingerprint; when something
   * was UNKNOWN, it is revived first and read again.
   */
  private async glance(agent: Principal, listenerId: string): Promise<ListenerGlance> {
    if (agent.listenerId !== listenerId) throw new ForbiddenError(OTHER_LISTENERS_KEY);
    const polls = new ListenerPoll(this.dataSource.manager);
    const look = () => (agent.workspaceId ? polls.glance(agent.workspaceId, listenerId) : null);
    let glance = await look();
    if (glance?.unknown) {
      await this.revive(listenerId);
      glance = await look();
    }
    if (!glance) throw NotFoundError.of('Listener', listenerId);
    return glance;
  }

  /**
   * Records the check-in. A listener that calls in again revives what the reconciler marked
   * UNKNOWN while it was silent: deployments go back to READY when their database name is recorded
   * and a rollout of theirs has begun (`ListenerPoll.checkIn`), else to AWAITING_DATABASE (a later
   * rollout's begin makes them READY); rollouts go back to DEPLOYING, so they reappear in the desired
   * state and the agent can finish them (their phase deadline still bounds them). Each revival is
   * its own conditional change, so a concurrent DELETE (AWAITING_DELETE, revisions INTERRUPTED)
   * is never overwritten.
   */
  private async revive(listenerId: string): Promise<void> {
    const manager = this.dataSource.manager;
    const { unknownDeployments, unknownRevisionIds } = await new ListenerPoll(manager).checkIn(listenerId);
    for (const d of unknownDeployments) {
      await transitionDeployment(manager, d.id, d.ready ? 'READY' : 'AWAITING_DATABASE', ['UNKNOWN']);
    }
    for (const id of unknownRevisionIds) {
      await this.dataSource.transaction((m) =>
        this.flow.begin(m, id, 'rollout', {
          from: ['UNKNOWN'],
          message: 'The listener is back; waiting for its report.',
        }),
      );
    }
  }
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return groups;
}

/** The deployment's namespace, else the listener's first, else `default`. */
function namespaceOf(listener: Listener, d: Deployment): string {
  return (
    d.sourceConfig.listener_config?.k8s_namespace || listener.computeConfig.k8s_namespaces?.[0] || DEFAULT_NAMESPACE
  );
}
