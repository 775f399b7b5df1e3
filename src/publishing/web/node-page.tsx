import type { NodeOption, NodePort } from '../crawler/node-description.js';
import { Icon, Layout } from './layout.js';
import type { NodePageModel, SiteInfo } from './model.js';
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
 */
export function NodeIcon(props: { url: string | null; size: { width: number; height: number } | null; name: string }) {
  if (!props.url) return <Icon url={null} name={props.name} size={32} />;
  const size = props.size ?? { width: 32, height: 32 };
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

function Ports(props: { title: string; ports: NodePort[] }) {
  if (!props.ports.length) return null;
  return (
    <>
      <h3>{props.title}</h3>
      <dl class="node-ports">
        {props.ports.map((p, i) => (
          <div key={i}>
            <dt>
              {p.dynamicGroup !== null ? `${p.name} (dynamic, group ${p.dynamicGroup})` : `${p.index ?? i}: ${p.name}`}
            </dt>
            <MarkupDd html={p.description} />
          </div>
        ))}
      </dl>
    </>
  );
}

/** One node: description, ports, options, views, icon, category path, its product and where to install it. */
export function NodePage(props: { site: SiteInfo; m: NodePageModel }) {
  const { site, m } = props;
  const d = m.description;
  return (
    <Layout
      site={site}
      head={{
        title: `${m.name} · ${m.productName} · ${site.name}`,
        description: d?.shortDescription || `${m.name} node of ${m.productName}`,
        canonical: m.url,
        noindex: m.productHidden,
      }}
    >
      <div class="wrap node-page">
        <nav aria-label="Breadcrumb" class="breadcrumb">
          <a href={m.productUrl}>{m.productName}</a> › <span>{m.categoryNames.join(' › ')}</span>
        </nav>
        <header class="node-head">
          <NodeIcon url={m.iconUrl} size={m.iconSize} name={m.name} />
          <div>
            <h1>{m.name}</h1>
            <p class="node-meta">
              {d?.nodeType ? <span class="pill">{d.nodeType}</span> : null}
              {m.deprecated ? <span class="badge badge-deprecated">Deprecated</span> : null}
              <span>Category: {m.categoryNames.join(' / ')}</span>
            </p>
            <p class="node-platforms">
              {m.platforms ? `Platforms: ${m.platforms.join(', ')}` : 'All platforms'}
            </p>
          </div>
        </header>
        <LabelNotice notice={m.labelNotice} productUrl={m.productUrl} node />
        {d?.shortDescription ? <p class="tagline">{d.shortDescription}</p> : null}
        <section class="card-section" aria-labelledby="node-install">
          <h2 id="node-install">Install</h2>
          <p>
            Part of <a href={m.productUrl}>{m.productName}</a>. Add this update site in the platform (Help › Install New
            Software…):
          </p>
          <code class="url">{m.installUrl}</code>
        </section>
        {d ? (
          <section class="card-section" aria-labelledby="node-description">
            <h2 id="node-description">Description</h2>
            <Markup html={d.intro} />
            {d.options.length || d.tabs.length ? <h3>Options</h3> : null}
            <Options options={d.options} />
            {d.tabs.map((t, i) => (
              <div key={i} class="node-tab">
                <h4>{t.name}</h4>
                <Markup html={t.description} />
                <Options options={t.options} />
              </div>
            ))}
            <Ports title="Input ports" ports={d.inPorts} />
            <Ports title="Output ports" ports={d.outPorts} />
            {d.views.length ? (
              <>
                <h3>Views</h3>
                <dl>
                  {d.views.map((v, i) => (
                    <div key={i}>
                      <dt>{v.name}</dt>
                      <MarkupDd html={v.description} />
                    </div>
                  ))}
                </dl>
              </>
            ) : null}
            {d.keywords.length ? <p class="node-keywords">Keywords: {d.keywords.join(', ')}</p> : null}
            {d.truncated ? (
              <p class="hint node-truncated">This description is longer than a node page shows and was cut; the node's own description in the platform has all of it.</p>
            ) : null}
          </section>
        ) : (
          <p class="hint">This node has no description file.</p>
        )}
        <p class="hint">
          Factory class <code>{m.factoryClass}</code> in bundle <code>{m.bundle}</code> (update site {m.label}).
        </p>
      </div>
    </Layout>
  );
}
