/** A comma-separated setting as its entries, trimmed, empties dropped. */
export const listOf = (value: string): string[] =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
