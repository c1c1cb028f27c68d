/** A DNS-1123 label, as Kubernetes requires for namespaces and most object names. */
export const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const DNS1123_LABEL_MAX = 63;

export function isDns1123Label(value: string): boolean {
  return value.length <= DNS1123_LABEL_MAX && DNS1123_LABEL.test(value);
}
