import { Fragment, type JSX } from 'preact';
import type { RenderedRelease } from '../content/product-content.js';
import { formatDate } from './dates.js';
import { Icon, Layout } from './layout.js';
import type { InstallLabel, ProductPageModel, SiteInfo } from './model.js';
import { LabelNotice, RecommendedNotice } from './label-notice.js';
import { labelAnchor } from '../notices/view.js';
import { DownloadsChart } from './downloads-chart.js';
import type { NodeGroup } from './model.js';
import { NodeIcon } from './node-page.js';

/** Ids the page itself uses; vendor headings get other ids (content/product-content.ts). */
export const PAGE_IDS = ['main', 'install', 'nodes', 'overview', 'changelog', 'faq', 'workflows', 'license', 'contact', 'copy-status', 'site-search'];

/** Vendor HTML that went through the sanitizer allowlist (content/markdown.ts). */
function Sanitized(props: { html: string; class?: string }) {
  return <div class={props.class ?? 'prose'} dangerouslySetInnerHTML={{ __html: props.html }} />;
}

interface TocEntry {
  id: string;
  text: string;
  children?: TocEntry[];
}

function tocEntries(m: ProductPageModel): TocEntry[] {
  const entries: TocEntry[] = [{ id: 'install', text: 'Install' }];
  if (m.nodes) entries.push({ id: 'nodes', text: 'Nodes' });
  const textHeadings = m.content.headings.filter((h) => h.level <= 3);
  if (m.content.textHtml !== '') {
    if (textHeadings.length === 0 || textHeadings[0]?.level !== 2) entries.push({ id: 'overview', text: 'Overview' });
    for (const h of textHeadings) {
      const last = entries[entries.length - 1];
      if (h.level === 3 && last && last.id !== 'install') {
        last.children = [...(last.children ?? []), { id: h.id, text: h.text }];
      } else entries.push({ id: h.id, text: h.text });
    }
  }
  if (m.content.changelog?.releases.length || m.content.changelogHtml) entries.push({ id: 'changelog', text: 'Changelog' });
  if (m.content.faq.length) entries.push({ id: 'faq', text: 'FAQ' });
  if (m.workflows?.length) entries.push({ id: 'workflows', text: 'Example workflows' });
  if (m.content.licenseHtml) entries.push({ id: 'license', text: 'License' });
  if (m.contact) entries.push({ id: 'contact', text: 'Contact' });
  return entries;
}

function Toc(props: { entries: TocEntry[] }) {
  const list = (items: TocEntry[]): JSX.Element => (
    <ul>
      {items.map((e) => (
        <li key={e.id}>
          <a href={`#${e.id}`}>{e.text}</a>
          {e.children?.length ? list(e.children) : null}
        </li>
      ))}
    </ul>
  );
  return (
    <nav class="toc" aria-labelledby="toc-title">
      <h2 id="toc-title">On this page</h2>
      {list(props.entries)}
    </nav>
  );
}

function Hero(props: { m: ProductPageModel }) {
  const { m } = props;
  const style: Record<string, string> = { '--c1': m.colors.color1, '--c2': m.colors.color2, '--fg': m.colors.text };
  if (m.colors.scrim) style['--scrim'] = m.colors.scrim;
  if (m.backgroundImageUrl) {
    // Any picture may sit behind the text: light text on a dark veil stays readable.
    style['background-image'] = `url("${m.backgroundImageUrl}")`;
    style['--fg'] = '#ffffff';
    style['--scrim'] = 'rgb(0 0 0 / 55%)';
  }
  return (
    <header class="hero" style={style}>
      <div class="hero-inner">
        <Icon url={m.iconUrl} name={m.name} size={96} />
        <div>
          <h1>{m.name}</h1>
          {m.description ? <p class="tagline">{m.description}</p> : null}
          {m.badge ? (
            <p class="hero-meta">
              <span class="sr-only">Latest version</span>
              <span class="version-badge" style={{ background: m.badge.color, color: m.badge.text }}>
                {m.badge.version}
              </span>
              <span>
                released <time dateTime={m.badge.date}>{formatDate(m.badge.date)}</time>
              </span>
            </p>
          ) : null}
        </div>
      </div>
    </header>
  );
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 10 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}


/** The platform's dialog path for an archived update site (Eclipse p2 "Add Repository" › "Archive…"). */
function ArchiveSteps() {
  return (
    <>
      in the platform choose <strong>Help › Install New Software…</strong>, click <strong>Add…</strong>, then{' '}
      <strong>Archive…</strong>, pick the downloaded file and select the extension.
    </>
  );
}

/** The platform releases a label installs into, from its metadata; nothing when unknown. */
function PlatformReleases(props: { l: InstallLabel }) {
  const { l } = props;
  return l.platformReleases ? (
    <span class="label-works" title={l.platformRange ?? undefined}>
      Works with platform {l.platformReleases}
    </span>
  ) : null;
}

/** A label with an update site: its URL to add in the platform, and the archive when there is one. */
function UpdateSiteRow(props: { l: InstallLabel & { url: string } }) {
  const { l } = props;
  return (
    <li class={l.recommended ? 'label-row recommended' : 'label-row'}>
      <div class="label-head">
        <span class="label-name">{l.label}</span>
        {l.recommended ? <span class="pill">Recommended</span> : null}
        <PlatformReleases l={l} />
        <span class="label-anchor" id={labelAnchor(l.label)} />
      </div>
      {l.why ? <p class="label-why">{l.why}</p> : null}
      <LabelNotice notice={l.notice} />
      <div class="url-line">
        <code class="url" id={`url-${l.label}`}>
          {l.url}
        </code>
        <button type="button" class="button secondary copy" data-copy={l.url} aria-describedby={`url-${l.label}`} hidden>
          Copy URL
        </button>
      </div>
      {l.archiveUrl ? (
        <p class="label-foot">
          Offline installation: <a href={l.archiveUrl}>download the archive</a> ({formatBytes(l.archiveBytes)}, zip)
        </p>
      ) : null}
    </li>
  );
}

/**
 * A label uploaded only as `update-site/<label>.zip` (spec area A "Files"): there is no update
 * site URL to show, so the row offers the archive and says how the platform installs from it.
 * `steps` is false when the section's hint above already says it (every label is an archive).
 */
function ArchiveRow(props: { l: InstallLabel & { archiveUrl: string }; steps: boolean }) {
  const { l, steps } = props;
  return (
    <li class={l.recommended ? 'label-row archive-only recommended' : 'label-row archive-only'}>
      <div class="label-head">
        <span class="label-name">{l.label}</span>
        {l.recommended ? <span class="pill">Recommended</span> : null}
        <span class="pill muted">Archive only</span>
        <PlatformReleases l={l} />
        <span class="label-anchor" id={labelAnchor(l.label)} />
      </div>
      {l.why ? <p class="label-why">{l.why}</p> : null}
      <LabelNotice notice={l.notice} />
      <p class="archive-line">
        <a class="button" href={l.archiveUrl}>
          Download {l.label}.zip
        </a>{' '}
        <small>
          ({formatBytes(l.archiveBytes)}, zip)
        </small>
      </p>
      {steps ? (
        <p class="label-foot">
          No update site URL for this label. After downloading, <ArchiveSteps />
        </p>
      ) : null}
    </li>
  );
}

/**
 * A label whose folder was uploaded but has no release yet (its first upload is being checked, or
 * was refused): the download host serves nothing for it, so there is no URL to offer.
 */
function UnreleasedRow(props: { l: InstallLabel }) {
  const { l } = props;
  return (
    <li class="label-row unreleased">
      <div class="label-head">
        <span class="label-name">{l.label}</span>
        <span class="pill muted">Not released yet</span>
        <span class="label-anchor" id={labelAnchor(l.label)} />
      </div>
      <p class="label-why">This label's upload has not passed the update-site check, so nothing can be installed from it yet.</p>
    </li>
  );
}

function Install(props: { m: ProductPageModel }) {
  const { m } = props;
  const labels = m.labels ?? [];
  const anySite = labels.some((l) => l.url !== null);
  const anyArchive = labels.some((l) => !l.unreleased && l.archiveUrl !== null);
  return (
    <section class="card-section install" aria-labelledby="install">
      <h2 id="install">Install</h2>
      {labels.length ? (
        <>
          {anySite ? (
            <p class="hint">
              In the platform, choose <strong>Help › Install New Software…</strong>, add the update site URL below and
              select the extension.
            </p>
          ) : anyArchive ? (
            <p class="hint">
              This extension is offered as an archive, not as an update site URL. Download the archive below; then{' '}
              <ArchiveSteps />
            </p>
          ) : (
            <p class="hint">Nothing can be installed yet: no label has been released.</p>
          )}
          <ul class="labels">
            {labels.map((l) =>
              l.unreleased ? (
                <UnreleasedRow key={l.label} l={l} />
              ) : l.url !== null ? (
                <UpdateSiteRow key={l.label} l={{ ...l, url: l.url }} />
              ) : l.archiveUrl !== null ? (
                <ArchiveRow key={l.label} l={{ ...l, archiveUrl: l.archiveUrl }} steps={anySite} />
              ) : null,
            )}
          </ul>
          {m.changesUrl ? <p class="changes-link"><a href={m.changesUrl}>What changed</a> between labels and releases</p> : null}
          {anySite ? <p id="copy-status" class="sr-only" aria-live="polite" /> : null}
        </>
      ) : (
        <p class="hint">No update site has been uploaded yet.</p>
      )}
      {m.content.instructionsHtml ? (
        <>
          <h3>After installing</h3>
          <Sanitized html={m.content.instructionsHtml} />
        </>
      ) : null}
    </section>
  );
}

const BADGE_CLASS: Record<string, string> = {
  Added: 'badge-added',
  Changed: 'badge-changed',
  Deprecated: 'badge-deprecated',
  Removed: 'badge-removed',
  Fixed: 'badge-fixed',
  Security: 'badge-security',
  Info: 'badge-info',
};

function Release(props: { r: RenderedRelease }) {
  const { r } = props;
  return (
    <article class="release" aria-labelledby={r.id}>
      <h3 id={r.id}>
        <span>{r.version}</span>
        {r.date ? (
          <time class="release-date" dateTime={r.date}>
            {formatDate(r.date)}
          </time>
        ) : null}
        {r.yanked ? <span class="badge badge-yanked">Yanked</span> : null}
        {r.breaking ? <span class="badge badge-breaking">Breaking</span> : null}
      </h3>
      {r.summaryHtml ? <Sanitized html={r.summaryHtml} /> : null}
      {r.sections.map((s, i) => (
        <div key={`${s.type}-${i}`} class="prose">
          <h4 class="change-type">{s.known ? <span class={`badge ${BADGE_CLASS[s.type]}`}>{s.type}</span> : s.type}</h4>
          <ul>
            {s.itemsHtml.map((html, j) => (
              <li key={j} dangerouslySetInnerHTML={{ __html: html }} />
            ))}
          </ul>
        </div>
      ))}
    </article>
  );
}

/**
 * The product's nodes, shown also while the page is hidden: every crawled label's, best first,
 * grouped by category (docs/vendors.md#your-nodes-in-the-node-catalog). Many nodes, or more than
 * one label, fold into <details> per label (no script needed), the best label open. A label shows
 * its first nodes only, and links to its full list, paged (web/product-nodes.ts): the page stays
 * the same size whatever a catalog holds.
 */
function Nodes(props: { m: ProductPageModel }) {
  const { m } = props;
  const lists = m.nodeLabels ?? [];
  if (!lists.length) return null;
  const folded = lists.length > 1 || lists.some((l) => l.count > NODE_LIST_OPEN_MAX);
  const nodes = (n: number) => (n === 1 ? '1 node' : `${n.toLocaleString('en')} nodes`);
  return (
    <section class="card-section" aria-labelledby="nodes">
      <h2 id="nodes">Nodes</h2>
      {lists.length === 1 ? (
        <p class="hint">From update site {lists[0]!.label}.</p>
      ) : (
        <p class="hint">
          From {lists.length} update sites: {lists.map((l) => l.label).join(', ')}.
        </p>
      )}
      <p class="node-list-search">
        <a href={`/nodes?product=${encodeURIComponent(m.id)}`}>Search the nodes of {m.name}</a>
      </p>
      {lists.map((l, i) => {
        const more =
          l.count > l.shown ? (
            <p class="node-list-more">
              <a href={l.listUrl}>{l.shown > 0 ? `All ${nodes(l.count)} of ${l.label}` : `The ${nodes(l.count)} of ${l.label}`}</a>
            </p>
          ) : null;
        return folded ? (
          <details key={l.label} class="node-label" open={i === 0}>
            <summary>
              <span class="label-name">{l.label}</span> <span class="node-count">{nodes(l.count)}</span>
              {l.recommended ? <span class="pill">Recommended</span> : null}
            </summary>
            <NodeGroups groups={l.groups} />
            {more}
          </details>
        ) : (
          <Fragment key={l.label}>
            <NodeGroups groups={l.groups} />
            {more}
          </Fragment>
        );
      })}
    </section>
  );
}

/** A label holding more nodes than this is folded: a long list must not push the rest of the page away. */
const NODE_LIST_OPEN_MAX = 12;

export function NodeGroups(props: { groups: NodeGroup[] }) {
  return (
    <>
      {props.groups.map((g) => (
        <div key={g.category} class="node-group">
          <h3>{g.category}</h3>
          <ul class="node-list">
            {g.nodes.map((n) => (
              <li key={n.url}>
                <span class="node-icon-slot">
                  <NodeIcon url={n.iconUrl} size={n.iconSize} name={n.name} fallback={16} />
                </span>
                <span class="node-list-text">
                  <a href={n.url}>{n.name}</a>
                  {n.deprecated ? <span class="badge badge-deprecated">Deprecated</span> : null}
                  {n.shortDescription ? <span class="node-short"> — {n.shortDescription}</span> : null}
                </span>
              </li>
            ))}
          </ul>
        </div>
      ))}
    </>
  );
}

function Changelog(props: { m: ProductPageModel }) {
  const c = props.m.content;
  if (!c.changelog?.releases.length && !c.changelogHtml) return null;
  return (
    <section class="card-section" aria-labelledby="changelog">
      <h2 id="changelog">Changelog</h2>
      {c.changelog ? (
        <>
          {c.changelog.introHtml ? <Sanitized html={c.changelog.introHtml} /> : null}
          {c.changelog.releases.map((r) => (
            <Release key={r.id} r={r} />
          ))}
        </>
      ) : (
        <Sanitized html={c.changelogHtml} />
      )}
    </section>
  );
}

function Faq(props: { m: ProductPageModel }) {
  const faq = props.m.content.faq;
  if (!faq.length) return null;
  return (
    <section class="card-section" aria-labelledby="faq">
      <h2 id="faq">Frequently asked questions</h2>
      {faq.map((e) => (
        <div key={e.id} class="faq-item">
          <h3 id={e.id}>
            <a href={`#${e.id}`}>{e.question}</a>
          </h3>
          <Sanitized html={e.answerHtml} />
        </div>
      ))}
    </section>
  );
}

export function ProductPage(props: { site: SiteInfo; m: ProductPageModel }) {
  const { site, m } = props;
  const c = m.content;
  return (
    <Layout
      site={site}
      script={m.labels?.some((l) => l.url !== null) ?? false}
      head={{
        title: `${m.name} · ${site.name}`,
        description: m.description || `${m.name} on ${site.name}`,
        canonical: m.pageUrl,
        noindex: m.hidden,
        ...(m.iconUrl ? { ogImage: `${site.baseUrl}${m.iconUrl}` } : {}),
        ...(m.feedUrl ? { feed: { title: `${m.name}: releases`, href: m.feedUrl } } : {}),
      }}
    >
      {m.hidden ? (
        <div class="notice" role="status">
          <p>
            <strong>Not live yet.</strong> This page is reachable by its address but is not listed in the catalog,
            search or feeds until staff make it live.
          </p>
        </div>
      ) : null}
      <RecommendedNotice labels={m.labels} />
      <Hero m={m} />
      <div class="page">
        <Toc entries={tocEntries(m)} />
        <div class="content">
          <Install m={m} />
          <DownloadsChart d={m.downloads} />
          <Nodes m={m} />
          {c.textHtml ? (
            <section class="card-section" aria-label="Overview" id="overview">
              <Sanitized html={c.textHtml} />
            </section>
          ) : null}
          <Changelog m={m} />
          <Faq m={m} />
          {m.workflows?.length ? (
            <section class="card-section" aria-labelledby="workflows">
              <h2 id="workflows">Example workflows</h2>
              <ul class="files">
                {m.workflows.map((w) => (
                  <li key={w.path}>
                    <a href={w.url}>{w.path}</a> <small>{formatBytes(w.size)}</small>
                  </li>
                ))}
              </ul>
              {m.workflowsMore ? (
                <p>
                  The first {m.workflows.length} of {m.workflowsMore.total.toLocaleString('en')} files. <a href={m.workflowsMore.indexUrl}>All example workflow files</a>
                </p>
              ) : null}
            </section>
          ) : null}
          {c.licenseHtml ? (
            <section class="card-section" aria-labelledby="license">
              <h2 id="license">License</h2>
              <Sanitized html={c.licenseHtml} />
            </section>
          ) : null}
          {m.contact ? (
            <section class="card-section" aria-labelledby="contact">
              <h2 id="contact">Contact</h2>
              <p>
                {m.contact.name} · <a href={`mailto:${m.contact.email}`}>{m.contact.email}</a>
              </p>
            </section>
          ) : null}
        </div>
      </div>
    </Layout>
  );
}
