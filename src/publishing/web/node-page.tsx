import type { NodeOption, NodePort } from '../model/nodes.js';
import { Icon, Layout } from './layout.js';
import type { IconSize, NodePageModel, SiteInfo } from './model.js';
import { LabelNotice } from './label-notice.js';

/** Description markup as the crawl stored it, sanitized (crawler/sanitize-node.ts). */
function Markup(props: { html: string }) {
  return props.html ? <div class="node-markup" dangerouslySetInnerHTML={{ __html: props.html }} /> : null;
}

/** A definition's description (an option, port or view): always present, even when empty. */
function MarkupDd(props: { html: string }) {
  return <dd class="node-markup" dangerouslySetInnerHTML={{ __html: props.html }} />;
}

/**
 * The node's own icon at its own pixel size, square-edged: node icons are 16 px artwork, which
 * scaling blurs and a circle clips. Pixelated rendering keeps it sharp on high-density screens.
 * An SVG (size unknown) is drawn at `fallback` px: vector art scales cleanly.
 */
export function NodeIcon(props: { url: string | null; size: IconSize | undefined; name: string; fallback?: number; scale?: number }) {
  const fallback = props.fallback ?? 32;
  if (!props.url) {
    return (
      <span class="node-icon node-icon-none" aria-hidden="true" style={{ width: `${fallback}px`, height: `${fallback}px` }}>
        {[...props.name.trim()][0]?.toUpperCase() ?? '?'}
      </span>
    );
  }
  // An integer scale only (pixelated: each source pixel becomes k×k screen pixels, no blur).
  const k = props.size && props.scale ? Math.max(1, Math.floor(props.scale)) : 1;
  const size = props.size ? { width: props.size.width * k, height: props.size.height * k } : { width: fallback, height: fallback };
  return <img class="node-icon" src={props.url} alt="" width={size.width} height={size.height} />;
}

function Options(props: { options: NodeOption[] }) {
  if (!props.options.length) return null;
  return (
    <dl class="node-options">
      {props.options.map((o, i) => (
        <div key={i}>
          <dt>{o.name}</dt>
          <MarkupDd html={o.description} />
        </div>
      ))}
    </dl>
  );
}

/**
 * Ports in the node's order: fixed ports by index; a dynamic port group (v3.x+ `dynInPort`,
 * `dynOutPort`) is a port the user adds in the workflow editor, named by its group.
 */
function Ports(props: { title: string; id: string; ports: NodePort[] }) {
  return (
    <div class="port-list">
      <h3 id={props.id}>{props.title}</h3>
      {props.ports.length ? (
        <dl class="node-ports">
          {props.ports.map((p, i) => (
            <div key={i} class={p.dynamicGroup !== null ? 'port port-dynamic' : 'port'}>
              <dt>
                {p.dynamicGroup !== null ? (
                  <>
                    <span class="port-index" title="Dynamic port: added in the workflow editor">
                      +
                    </span>
                    <span class="port-name">{p.name}</span> <span class="pill muted port-group">Dynamic port group “{p.dynamicGroup}”</span>
                  </>
                ) : (
                  <>
                    <span class="port-index">{p.index ?? i}</span>
                    <span class="port-name">{p.name}</span>
                  </>
                )}
              </dt>
              <MarkupDd html={p.description} />
            </div>
          ))}
        </dl>
      ) : (
        <p class="hint">None.</p>
      )}
    </div>
  );
}

function CopyField(props: { id: string; url: string }) {
  return (
    <div class="url-line">
      <input class="url url-field" id={props.id} type="text" readOnly value={props.url} aria-label="Update site URL" />
      <button type="button" class="button secondary copy" data-copy={props.url} aria-describedby={props.id} hidden>
        Copy URL
      </button>
    </div>
  );
}

/** One node: description, ports, options, views, icon, category path, its product and where to install it. */
export function NodePage(props: { site: SiteInfo; m: NodePageModel }) {
  const { site, m } = props;
  const d = m.description;
  const c = m.productColors;
  const heroStyle = { '--c1': c.color1, '--c2': c.color2, '--fg': c.text, ...(c.scrim ? { '--scrim': c.scrim } : {}) };
  const hasOptions = d ? d.options.length > 0 || d.tabs.some((t) => t.options.length > 0 || t.description) : false;
  return (
    <Layout
      site={site}
      script
      head={{
        title: `${m.name} · ${m.productName} · ${site.name}`,
        description: d?.shortDescription || `${m.name} node of ${m.productName}`,
        canonical: m.url,
        noindex: m.productHidden,
      }}
    >
      <div class="hero node-hero" style={heroStyle}>
        <div class="node-hero-inner">
          <nav aria-label="Breadcrumb" class="breadcrumb">
            <Icon url={m.productIconUrl} name={m.productName} size={28} />
            <a href={m.productUrl}>{m.productName}</a>
            {m.categoryNames.length ? (
              <>
                <span aria-hidden="true"> › </span>
                {m.categorySearchUrl ? <a href={m.categorySearchUrl}>{m.categoryNames.join(' › ')}</a> : <span>{m.categoryNames.join(' › ')}</span>}
              </>
            ) : null}
          </nav>
          <header class="node-head">
            <span class="node-icon-frame">
              {/* 16 px artwork drawn at twice its size: the page's one large picture of the node. */}
              <NodeIcon url={m.iconUrl} size={m.iconSize} name={m.name} scale={m.iconSize && m.iconSize.width <= 24 ? 2 : 1} />
            </span>
            <div>
              <h1>{m.name}</h1>
              <p class="node-meta">
                {d?.nodeType ? <span class="pill muted">{d.nodeType}</span> : null}
                {m.deprecated ? <span class="badge badge-deprecated">Deprecated</span> : null}
                <span class="node-platforms">{m.platforms ? `Platforms: ${m.platforms.join(', ')}` : 'All platforms'}</span>
              </p>
            </div>
          </header>
          {d?.shortDescription ? <p class="tagline">{d.shortDescription}</p> : null}
        </div>
      </div>
      <div class="wrap node-page">
        <div class="node-main">
          <LabelNotice notice={m.labelNotice} productUrl={m.productUrl} node />
          {m.deprecated ? (
            <div class="node-deprecation" role="note">
              <p>
                <strong>This node is deprecated.</strong>{' '}
                {m.replacement ? (
                  <>
                    Use{' '}
                    <a class="replacement-link" href={m.replacement.url}>
                      {m.replacement.name}
                    </a>{' '}
                    instead.
                  </>
                ) : (
                  'It stays for existing workflows; new workflows should not use it.'
                )}
              </p>
            </div>
          ) : null}
          {d ? (
            <>
              <section class="card-section" aria-labelledby="node-description">
                <h2 id="node-description">Description</h2>
                <Markup html={d.intro} />
                {!d.intro ? <p class="hint">The node's description has no introduction.</p> : null}
                {d.keywords.length ? (
                  <p class="node-keywords">
                    <span class="sr-only">Keywords: </span>
                    {d.keywords.map((k, i) => (
                      <span key={i} class="keyword">
                        {k}
                      </span>
                    ))}
                  </p>
                ) : null}
              </section>
              <section class="card-section" aria-labelledby="node-ports">
                <h2 id="node-ports">Ports</h2>
                <div class="ports-grid">
                  <Ports title="Input ports" id="node-in-ports" ports={d.inPorts} />
                  <Ports title="Output ports" id="node-out-ports" ports={d.outPorts} />
                </div>
              </section>
              {hasOptions ? (
                <section class="card-section" aria-labelledby="node-options">
                  <h2 id="node-options">Options</h2>
                  <Options options={d.options} />
                  {d.tabs.map((t, i) => (
                    <div key={i} class="node-tab">
                      <h3>{t.name ? `Tab “${t.name}”` : 'Tab'}</h3>
                      <Markup html={t.description} />
                      <Options options={t.options} />
                    </div>
                  ))}
                </section>
              ) : null}
              {d.views.length ? (
                <section class="card-section" aria-labelledby="node-views">
                  <h2 id="node-views">Views</h2>
                  <dl class="node-views">
                    {d.views.map((v, i) => (
                      <div key={i}>
                        <dt>{v.name}</dt>
                        <MarkupDd html={v.description} />
                      </div>
                    ))}
                  </dl>
                </section>
              ) : null}
              {d.truncated ? (
                <p class="hint node-truncated">This description is longer than a node page shows and was cut; the node's own description in the platform has all of it.</p>
              ) : null}
            </>
          ) : (
            <p class="hint">This node has no description file.</p>
          )}
        </div>
        <aside class="node-aside" aria-label="Install and versions">
          <section class="card-section node-install" aria-labelledby="node-install">
            <h2 id="node-install">Install</h2>
            <p>
              Part of <a href={m.productUrl}>{m.productName}</a>. In the platform, choose <strong>Help › Install New Software…</strong> and
              add this update site ({m.label}):
            </p>
            <CopyField id="node-install-url" url={m.installUrl} />
            <p id="copy-status" class="sr-only" aria-live="polite" />
          </section>
          <section class="card-section node-labels" aria-labelledby="node-labels">
            <h2 id="node-labels">Update sites with this node</h2>
            <ul class="node-label-list">
              {m.labels.map((l) => (
                <li key={l.label} class={l.installed ? 'installed' : undefined}>
                  <span class="label-name">{l.label}</span>
                  {l.recommended ? <span class="pill">Recommended</span> : null}
                  {m.descriptionChangedIn.includes(l.label) ? <span class="badge badge-changed">Description changed</span> : null}
                  <code class="url">{l.url}</code>
                </li>
              ))}
            </ul>
            <p class="hint node-history">
              {m.labels.length < 2
                ? `Only update site ${m.label} has this node.`
                : m.descriptionChangedIn.length
                  ? `Description changed in ${m.descriptionChangedIn.join(', ')}.`
                  : 'The description is the same in every update site listed.'}
            </p>
          </section>
          <section class="card-section node-details" aria-labelledby="node-details">
            <h2 id="node-details">Details</h2>
            <dl>
              <dt>Category</dt>
              <dd>{m.categoryNames.length ? m.categoryNames.join(' / ') : 'Uncategorized'}</dd>
              <dt>Factory class</dt>
              <dd>
                <code>{m.factoryClass}</code>
              </dd>
              <dt>Bundle</dt>
              <dd>
                <code>{m.bundle}</code>
              </dd>
            </dl>
            <p>
              <a href={m.productSearchUrl}>All nodes of {m.productName}</a>
              <br />
              <a href="/nodes">Search every node</a>
            </p>
          </section>
        </aside>
      </div>
    </Layout>
  );
}
