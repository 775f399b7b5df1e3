// What an icon may contain. Static drawing only: nothing that runs code (script, on*, animation
// that can rewrite href), embeds other documents (foreignObject, iframe), fetches resources
// (image, feImage, external href/url()) or styles the surrounding page (<style>, class).

export const ELEMENTS = new Set([
  'svg', 'g', 'path', 'rect', 'circle', 'ellipse', 'line', 'polyline', 'polygon',
  'text', 'tspan', 'textPath', 'title', 'desc', 'defs', 'symbol', 'use', 'marker',
  'linearGradient', 'radialGradient', 'stop', 'clipPath', 'mask', 'pattern',
  'filter', 'feBlend', 'feColorMatrix', 'feComponentTransfer', 'feComposite', 'feDropShadow',
  'feFlood', 'feFuncA', 'feFuncB', 'feFuncG', 'feFuncR', 'feGaussianBlur', 'feMerge',
  'feMergeNode', 'feMorphology', 'feOffset',
]);

/** Elements whose character data is visible and therefore kept. */
export const TEXT_ELEMENTS = new Set(['text', 'tspan', 'textPath', 'title', 'desc']);

/** Dropped but their children kept: a link around artwork should not lose the artwork. */
export const UNWRAP = new Set(['a']);

/** Children of <svg> that draw nothing; an icon made only of these is empty. */
export const NON_DRAWING = new Set(['title', 'desc', 'defs']);

/** Presentation properties, allowed as attributes and as declarations in style="…". */
export const PRESENTATION = new Set([
  'fill', 'fill-opacity', 'fill-rule', 'stroke', 'stroke-width', 'stroke-linecap',
  'stroke-linejoin', 'stroke-miterlimit', 'stroke-dasharray', 'stroke-dashoffset',
  'stroke-opacity', 'opacity', 'clip-path', 'clip-rule', 'mask', 'filter', 'color',
  'display', 'visibility', 'overflow', 'stop-color', 'stop-opacity', 'flood-color',
  'flood-opacity', 'lighting-color', 'font-family', 'font-size', 'font-weight', 'font-style',
  'font-variant', 'font-stretch', 'text-anchor', 'dominant-baseline', 'alignment-baseline',
  'baseline-shift', 'letter-spacing', 'word-spacing', 'text-decoration', 'writing-mode',
  'marker-start', 'marker-mid', 'marker-end', 'vector-effect', 'shape-rendering',
  'text-rendering', 'image-rendering', 'color-interpolation', 'color-interpolation-filters',
  'paint-order', 'mix-blend-mode', 'isolation', 'transform', 'transform-origin',
]);

export const ATTRIBUTES = new Set([
  ...PRESENTATION,
  'id', 'style', 'href', 'viewBox', 'preserveAspectRatio', 'width', 'height', 'version',
  'x', 'y', 'x1', 'y1', 'x2', 'y2', 'cx', 'cy', 'r', 'rx', 'ry', 'fx', 'fy', 'fr',
  'd', 'points', 'pathLength', 'dx', 'dy', 'rotate', 'textLength', 'lengthAdjust',
  'startOffset', 'method', 'spacing', 'side', 'offset',
  'gradientUnits', 'gradientTransform', 'spreadMethod',
  'patternUnits', 'patternContentUnits', 'patternTransform',
  'clipPathUnits', 'maskUnits', 'maskContentUnits',
  'markerWidth', 'markerHeight', 'markerUnits', 'refX', 'refY', 'orient',
  'filterUnits', 'primitiveUnits', 'in', 'in2', 'result', 'stdDeviation', 'mode', 'type',
  'values', 'operator', 'k1', 'k2', 'k3', 'k4', 'radius', 'tableValues', 'slope',
  'intercept', 'amplitude', 'exponent',
  'role', 'aria-label', 'aria-hidden', 'aria-labelledby', 'aria-describedby', 'focusable',
  'xml:space', 'xml:lang', 'lang',
]);

/** CSS functions a style declaration may use; anything else could fetch or inject. */
export const STYLE_FUNCTIONS = new Set([
  'url', 'rgb', 'rgba', 'hsl', 'hsla', 'calc', 'var',
  // transform="…" and transform: (lower-cased, as they are compared)
  'matrix', 'translate', 'translatex', 'translatey', 'scale', 'scalex', 'scaley', 'rotate', 'skewx', 'skewy',
]);
