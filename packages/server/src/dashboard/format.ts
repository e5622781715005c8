/** The dashboard's text helpers: escaping, numbers, times and the section wrapper every part shares. */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** esc returns `text` with the five HTML-special characters escaped (keys and names come from clients and configs). */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** rate returns a rate with two, one or no decimals as it grows past 10 and 100. */
export function rate(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}

/** count returns a whole number with thousands separators. */
export function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** clockTime returns the UTC time of day of `ms` since the epoch, to the millisecond. */
export function clockTime(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

/** ms returns a duration in ms with two decimals below 10 and one above; `–` for undefined. */
export function ms(n: number | undefined): string {
  return n === undefined ? '–' : n < 10 ? n.toFixed(2) : n.toFixed(1);
}

/** section returns a titled section of the page. */
export function section(id: string, title: string, body: string): string {
  return `<section id="${id}"><h2>${esc(title)}</h2>${body}</section>`;
}
