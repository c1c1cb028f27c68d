/**
 * LangGraph's Agent Inbox convention (docs/console.md, Agent): an interrupt whose value is a
 * HumanInterrupt (or a list of them) asks a person to accept, edit, answer or ignore an action
 * the graph is about to take, and is resumed with a list holding one HumanResponse.
 */

export interface HumanInterrupt {
  action_request: { action: string; args: Record<string, unknown> };
  config: { allow_ignore: boolean; allow_respond: boolean; allow_edit: boolean; allow_accept: boolean };
  description?: string;
}

export type HumanResponse =
  | { type: 'accept'; args: null }
  | { type: 'edit'; args: { action: string; args: Record<string, unknown> } }
  | { type: 'response'; args: string }
  | { type: 'ignore'; args: null };

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const CONFIG_KEYS = ['allow_ignore', 'allow_respond', 'allow_edit', 'allow_accept'] as const;

function isHumanInterrupt(v: unknown): v is HumanInterrupt {
  if (!isRecord(v) || !isRecord(v.action_request) || !isRecord(v.config)) return false;
  const { action, args } = v.action_request;
  const config = v.config;
  return (
    typeof action === 'string' &&
    isRecord(args) &&
    CONFIG_KEYS.every((k) => typeof config[k] === 'boolean') &&
    (v.description === undefined || v.description === null || typeof v.description === 'string')
  );
}

/** The requests an interrupt's value makes, or null when it is not shaped as the convention says (a generic interrupt). */
export function humanRequests(value: unknown): HumanInterrupt[] | null {
  const list = Array.isArray(value) ? value : [value];
  return list.length && list.every(isHumanInterrupt) ? list : null;
}

/** One argument's value in words: text as it is, numbers and yes/no plainly, anything nested as compact JSON. */
export function argWords(value: unknown): string {
  if (value === null || value === undefined) return 'none';
  if (typeof value === 'string') return value || '(empty)';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'number') return String(value);
  return JSON.stringify(value);
}

/** What an interrupted thread waits on, for the inbox's list: the request's description, else its action. */
export function requestSummary(value: unknown): string | null {
  const requests = humanRequests(value);
  if (!requests) return null;
  return requests.map((r) => `${r.action_request.action}: ${r.description || 'waiting for review'}`).join('; ');
}

/** Edited arguments typed as JSON, checked before anything is sent: an object, as the action's arguments are. */
export function parseEditedArgs(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`That is no JSON: ${(err as Error).message}`);
  }
  if (!isRecord(parsed)) throw new Error('The arguments must be a JSON object, such as {"to": "ops@example.com"}.');
  return parsed;
}

/**
 * The resume value answering `response`: the list the convention expects, or, when the thread
 * waits on several interrupts, that list for the one answered, by its id (LangGraph resumes each
 * interrupt by id then).
 */
export function resumeValue(response: HumanResponse, interruptId: string | undefined, pending: number): unknown {
  return pending > 1 && interruptId ? { [interruptId]: [response] } : [response];
}
