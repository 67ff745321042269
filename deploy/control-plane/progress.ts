export type Progress = (message: string) => void;

export const silent: Progress = () => {};

export function seconds(sinceMs: number): string {
  return `${((performance.now() - sinceMs) / 1000).toFixed(1)} s`;
}
