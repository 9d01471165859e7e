/** See dist-fresh.js. `root`: the checkout (a file: URL ending in /); by default this one. */
export function distState(root?: URL): 'fresh' | 'stale' | 'missing';
