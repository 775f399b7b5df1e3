/**
 * Stable URL of a node page: product and factory class, whatever label it came from. The one
 * rule for that address, below both the pages that serve it (web/) and the changes API that
 * links to it (changes/present.ts).
 */
export const nodeUrl = (productId: string, factoryClass: string) => `/product/${productId}/nodes/${encodeURIComponent(factoryClass)}`;
