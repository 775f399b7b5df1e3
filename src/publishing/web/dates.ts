// Dates as the pages show them.
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** "1 May 2024" from "2024-05-01", independent of the server's locale. */
export function formatDate(iso: string): string {
  const [y, mo, d] = iso.slice(0, 10).split('-').map(Number);
  return `${d} ${MONTHS[(mo ?? 1) - 1]} ${y}`;
}
