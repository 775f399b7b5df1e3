import type { ComponentChildren } from 'preact';
import { SCRIPT, STYLESHEET } from './assets.js';
import type { SiteInfo } from './model.js';

export interface HeadInfo {
  title: string;
  description?: string;
  /** Absolute canonical URL; also og:url. */
  canonical?: string;
  noindex?: boolean;
  ogImage?: string;
  feed?: { title: string; href: string };
}

/** The page shell: landmarks, skip link, site search, footer. Scripts only where asked. */
export function Layout(props: {
  site: SiteInfo;
  head: HeadInfo;
  query?: string;
  script?: boolean;
  children: ComponentChildren;
}) {
  const { site, head } = props;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{head.title}</title>
        {head.description ? <meta name="description" content={head.description} /> : null}
        {head.noindex ? <meta name="robots" content="noindex" /> : null}
        {head.canonical ? <link rel="canonical" href={head.canonical} /> : null}
        <meta name="color-scheme" content="light dark" />
        <meta property="og:site_name" content={site.name} />
        <meta property="og:type" content="website" />
        <meta property="og:title" content={head.title} />
        {head.description ? <meta property="og:description" content={head.description} /> : null}
        {head.canonical ? <meta property="og:url" content={head.canonical} /> : null}
        {head.ogImage ? <meta property="og:image" content={head.ogImage} /> : null}
        <meta name="twitter:card" content="summary" />
        <meta name="twitter:title" content={head.title} />
        {head.description ? <meta name="twitter:description" content={head.description} /> : null}
        {head.feed ? <link rel="alternate" type="application/atom+xml" title={head.feed.title} href={head.feed.href} /> : null}
        <link rel="alternate" type="application/atom+xml" title={`${site.name}: all releases`} href="/releases.atom" />
        <link rel="stylesheet" href={STYLESHEET.path} />
        {props.script ? <script src={SCRIPT.path} defer /> : null}
      </head>
      <body>
        <a class="skip-link" href="#main">
          Skip to content
        </a>
        <header class="site-header">
          <div class="bar">
            <a class="brand" href="/">
              <span class="brand-mark" aria-hidden="true">
                P
              </span>
              {site.name} <small>extensions</small>
            </a>
            <nav class="site-nav" aria-label="Site">
              <a class="nav-link" href="/">
                Extensions
              </a>
              <a class="nav-link" href="/nodes">
                Nodes
              </a>
            </nav>
            <search class="search">
            <form action="/" method="get">
              <label class="sr-only" for="site-search">
                Search extensions
              </label>
              <input id="site-search" type="search" name="q" value={props.query ?? ''} placeholder="Search extensions" maxLength={200} />
              <button type="submit">Search</button>
            </form>
            </search>
          </div>
        </header>
        <main id="main" tabIndex={-1}>
          {props.children}
        </main>
        <footer class="site-footer">
          <div class="wrap">
            <a href="/">All extensions</a>
            <a href="/nodes">Node search</a>
            <a href="/releases.atom">Release feed</a>
            <a href="/sitemap.xml">Sitemap</a>
            <a href="/api/docs">API</a>
          </div>
        </footer>
      </body>
    </html>
  );
}

/** The product icon cropped to a circle, or the name's first letter when there is none. */
export function Icon(props: { url: string | null; name: string; size: number }) {
  if (props.url) return <img class="icon" src={props.url} alt="" width={props.size} height={props.size} />;
  return (
    <span class="icon icon-placeholder" aria-hidden="true">
      {[...props.name.trim()][0]?.toUpperCase() ?? '?'}
    </span>
  );
}
