/**
 * Work held at once, per caller and in all: what a request may hold (an MCP wait polling the
 * database, a resource read of up to 2 MiB in memory, a live log stream) is bounded by how many
 * run at once, so no caller (a read-only token included) can hold the process's memory or
 * database.
 */
export class ConcurrencyLimit {
  private readonly held = new Map<string, number>();
  private all = 0;

  constructor(
    readonly perCaller: number,
    readonly total: number,
  ) {}

  /** Takes a place for `caller`; false when its share or the total is taken. */
  enter(caller: string): boolean {
    const mine = this.held.get(caller) ?? 0;
    if (mine >= this.perCaller || this.all >= this.total) return false;
    this.held.set(caller, mine + 1);
    this.all++;
    return true;
  }

  leave(caller: string): void {
    const mine = (this.held.get(caller) ?? 1) - 1;
    if (mine <= 0) this.held.delete(caller);
    else this.held.set(caller, mine);
    this.all--;
  }
}
