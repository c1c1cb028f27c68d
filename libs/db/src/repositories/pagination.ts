export interface Page {
  limit: number;
  offset: number;
}
