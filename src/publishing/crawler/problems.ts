/** What the integrity report lists. `fatal` blocks going live (issue 11, "Going live"). */
export interface CrawlProblem {
  severity: 'fatal' | 'error' | 'warning';
  code:
    | 'metadata_unreadable'
    | 'crawl_failed'
    | 'artifact_missing'
    | 'checksum_mismatch'
    | 'jar_unreadable'
    | 'xml_error'
    | 'fetch_failed'
    | 'composite_cycle'
    | 'composite_too_deep'
    | 'category_undeclared'
    | 'description_missing'
    | 'label_removed';
  message: string;
  /** URL or `bundle!entry` the problem is about. */
  where: string;
  line?: number;
}

export class ProblemList {
  readonly items: CrawlProblem[] = [];
  /** Enough to tell what is wrong; a hostile site cannot grow the report without bound. */
  constructor(private readonly max = 500) {}
  add(p: CrawlProblem): void {
    if (this.items.length < this.max) this.items.push(p);
  }
}
