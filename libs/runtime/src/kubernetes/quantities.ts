/**
 * Resource quantities as Kubernetes writes them. CPU comes in cores (fractions allowed, docs/api.md,
 * Deployments) and becomes millicores unless it is a whole number of cores; memory comes in MB and is
 * rendered as Mi, the unit the product's defaults (512, 1024, 2048) were chosen in.
 */

/** 0.5 → "500m", 1 → "1", 1.25 → "1250m". Never below 1m: a zero request means "no request". */
export function cpuQuantity(cores: number): string {
  const milli = Math.max(1, Math.round(cores * 1000));
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

/** 512 → "512Mi". */
export function memoryQuantity(mb: number): string {
  return `${Math.max(1, Math.round(mb))}Mi`;
}

/** 10 → "10Gi". */
export function storageQuantity(gi: number): string {
  return `${Math.max(1, Math.round(gi))}Gi`;
}
