import { describe, expect, it } from 'vitest';
import { breakable, html } from '../../src/web/html.js';
import { errorPage } from '../../src/web/pages/error.js';

describe('html templates', () => {
  it('escape every value that is not HTML made here, in text and in attributes', () => {
    const name = `<script>alert("x")</script> & 'co'`;
    expect(html`<p title="${name}">${name}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;</p>',
    );
    expect(html`<ul>${['<a>', html`<li>b</li>`]}</ul>`.text).toBe('<ul>&lt;a&gt;<li>b</li></ul>');
    expect(html`${undefined}${null}${false}${0}`.text).toBe('0');
  });

  it('let a long URL break after its slashes, and escape it', () => {
    expect(breakable('git://example.org/team/site.git').text).toBe('git:/<wbr>/<wbr>example.org/<wbr>team/<wbr>site.git');
    expect(breakable('a/<b>&').text).toBe('a/<wbr>&lt;b&gt;&amp;');
  });

  it('keep a hostile message out of the markup of an error page', () => {
    const page = errorPage({ status: 415, message: 'bad <img src=x onerror=alert(1)>', code: 'unsupported_image_format', requestId: 'r"1' });
    expect(page).not.toContain('<img');
    expect(page).toContain('bad &lt;img src=x onerror=alert(1)&gt;');
    expect(page).toContain('r&quot;1');
  });
});
