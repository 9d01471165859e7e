/** See dist-fresh.js. */
export function distState(): 'fresh' | 'stale' | 'missing';
