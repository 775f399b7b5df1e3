/**
 * What the integrity report lists. `fatal` blocks going live
 * (docs/staff.md#crawling-and-going-live).
 */
export interface CrawlProblem {
  severity: 'fatal' | 'error' | 'warning';
  code:
    | 'metadata_unreadable'
    | 'crawl_failed'
    | 'crawl_limit_exceeded'
    | 'crawl_result_too_large'
    | 'artifact_missing'
    | 'checksum_mismatch'
    | 'jar_unreadable'
    | 'xml_error'
    | 'metadata_empty'
    | 'fetch_failed'
    | 'composite_cycle'
    | 'composite_too_deep'
    | 'composite_child_refused'
    | 'category_undeclared'
    | 'description_missing'
    | 'node_duplicate'
    | 'label_removed'
    | 'description_truncated'
    | 'icon_refused'
    | 'platform_range_conflict'
    | 'platform_range_label'
    | 'node_limit_exceeded'
    | 'node_data_quota_exceeded';
  message: string;
  /** URL or `bundle!entry` the problem is about. */
  where: string;
  line?: number;
}

export class ProblemList {
  readonly items: CrawlProblem[] = [];
  /** Enough to tell what is wrong; a hostile site cannot grow the report without bound. */
  constructor(private readonly max = 500) {}
  private readonly seen = new Set<string>();
  add(p: CrawlProblem): void {
    // The metadata and the artifact pass may meet the same defect: it is listed once.
    const key = `${p.severity} ${p.code} ${p.where} ${p.message}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    if (this.items.length < this.max) this.items.push(p);
  }
}
