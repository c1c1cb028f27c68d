/** A UUID in its text form (any version, either case): ids the api hands out and accepts. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a UUID in its text form. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
