// Renders the visible main content of the page as Markdown. Called with
// { links: bool }; returns { html_chars, markdown }.
((args) => {
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'CANVAS', 'IFRAME', 'HEAD', 'META', 'LINK']);
  const NOISE = /(^|[\s_-])(ad|ads|advert|advertisement|banner|cookie|sponsor|promo)([\s_-]|$)/i;
  const BLOCK = new Set(['P', 'DIV', 'SECTION', 'ARTICLE', 'MAIN', 'HEADER', 'FOOTER', 'ASIDE', 'NAV',
    'FORM', 'FIELDSET', 'TABLE', 'TR', 'UL', 'OL', 'DL', 'BLOCKQUOTE', 'FIGURE', 'DETAILS', 'BODY']);
  const hidden = (el) => {
    const s = getComputedStyle(el);
    return s.display === 'none' || s.visibility === 'hidden';
  };
  const noisy = (el) => NOISE.test(el.id || '') || NOISE.test(typeof el.className === 'string' ? el.className : '')
    || el.getAttribute('aria-hidden') === 'true';
  const inline = (node) => {
    let out = '';
    for (const c of node.childNodes) out += render(c, 0);
    return out.replace(/\s+/g, ' ').trim();
  };
  const render = (node, depth) => {
    if (node.nodeType === Node.TEXT_NODE) return node.textContent;
    if (node.nodeType !== Node.ELEMENT_NODE) return '';
    const el = node;
    const tag = el.tagName.toUpperCase();
    if (SKIP.has(tag) || hidden(el) || noisy(el)) return '';
    const kids = () => { let s = ''; for (const c of el.childNodes) s += render(c, depth); return s; };
    switch (tag) {
      case 'H1': case 'H2': case 'H3': case 'H4': case 'H5': case 'H6':
        return `\n\n${'#'.repeat(Number(tag[1]))} ${inline(el)}\n\n`;
      case 'BR': return '\n';
      case 'HR': return '\n\n---\n\n';
      case 'STRONG': case 'B': { const t = inline(el); return t ? `**${t}**` : ''; }
      case 'EM': case 'I': { const t = inline(el); return t ? `*${t}*` : ''; }
      case 'CODE': return el.closest('pre') ? el.textContent : `\`${el.textContent}\``;
      case 'PRE': return `\n\n\`\`\`\n${el.innerText}\n\`\`\`\n\n`;
      case 'A': {
        const t = inline(el);
        if (!args.links || !el.getAttribute('href')) return t;
        return `[${t}](${el.href})`;
      }
      case 'IMG': {
        const alt = (el.getAttribute('alt') || '').trim();
        return alt ? (args.links ? `![${alt}](${el.src})` : alt) : '';
      }
      case 'LI': {
        const parent = el.parentElement;
        const ordered = parent && parent.tagName === 'OL';
        const pos = parent ? Array.prototype.indexOf.call(parent.children, el) + 1 : 1;
        const body = kids().replace(/\n{2,}/g, '\n').trim().replace(/\n/g, '\n  ');
        return `\n${'  '.repeat(depth)}${ordered ? pos + '.' : '-'} ${body}`;
      }
      case 'UL': case 'OL': {
        let s = '';
        for (const c of el.childNodes) s += render(c, depth + 1);
        return `\n${s}\n`;
      }
      case 'TR': {
        const cells = Array.from(el.children).map((c) => inline(c));
        return `\n| ${cells.join(' | ')} |`;
      }
      case 'INPUT': case 'SELECT': case 'TEXTAREA': case 'BUTTON': {
        const label = tag === 'BUTTON' ? inline(el) : (el.value || el.getAttribute('placeholder') || '');
        return label ? ` ${label} ` : '';
      }
      default:
        return BLOCK.has(tag) ? `\n\n${kids()}\n\n` : kids();
    }
  };
  const root = document.querySelector('main') || document.body || document.documentElement;
  const markdown = render(root, 0);
  return { html_chars: document.documentElement.outerHTML.length, markdown };
})
