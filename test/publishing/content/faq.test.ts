import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import GithubSlugger from 'github-slugger';
import { parseFaq } from '../../../src/publishing/content/faq.js';

const lines = (...l: string[]) => l.join('\n');

describe('parseFaq', () => {
  it('turns each "## " heading into a question with the Markdown up to the next "##" as answer', () => {
    const result = parseFaq(lines(
      '## How do I install it?', //            1
      '',
      'Add the update site:', //                3
      '',
      '1. Open *Preferences*',
      '2. Add the URL',
      '',
      '### Troubleshooting', //                 8
      'Restart.',
      '## Is it free?', //                      10
      'Yes.',
    ));
    assert.deepEqual(result.errors, []);
    assert.deepEqual(result.warnings, []);
    assert.deepEqual(result.entries, [
      {
        question: 'How do I install it?',
        id: 'how-do-i-install-it',
        answerMarkdown: 'Add the update site:\n\n1. Open *Preferences*\n2. Add the URL\n\n### Troubleshooting\nRestart.',
        line: 1,
      },
      { question: 'Is it free?', id: 'is-it-free', answerMarkdown: 'Yes.', line: 10 },
    ]);
  });

  it('does not treat "##" inside a fence, list or quote as a question', () => {
    const result = parseFaq(lines('## Q', '```md', '## Not a question', '```', '- ## nor this', '> ## nor this'));
    assert.deepEqual(result.entries.map((e) => e.question), ['Q']);
    assert.equal(result.entries[0]?.answerMarkdown, '```md\n## Not a question\n```\n- ## nor this\n> ## nor this');
  });

  it('uses plain text of the heading and unique ids for repeated questions', () => {
    const result = parseFaq('## What is `knime`?\nA\n## What is `knime`?\nB\n## ???\nC');
    assert.deepEqual(result.entries.map((e) => [e.question, e.id]), [['What is knime?', 'what-is-knime'], ['What is knime?', 'what-is-knime-1'], ['???', 'section']]);
    assert.deepEqual(result.warnings, [{ line: 3, message: 'question "What is knime?" repeats line 1' }]);
  });

  it('can share a slugger with the rest of the page', () => {
    const slugger = new GithubSlugger();
    slugger.slug('installation');
    assert.equal(parseFaq('## Installation\nx', { slugger }).entries[0]?.id, 'installation-1');
  });

  it('warns about text before the first question, with its line', () => {
    const result = parseFaq('\n\nSome intro.\n\nMore.\n## Q\nA');
    assert.deepEqual(result.warnings, [{ line: 3, message: 'text before the first "## Question" is not shown' }]);
    assert.equal(result.entries.length, 1);
  });

  it('warns about "#" headings and empty answers', () => {
    const result = parseFaq(lines('# FAQ', '## Empty?', '', '## Q2', '# Stray', 'A'));
    assert.deepEqual(result.errors, []);
    assert.deepEqual(result.warnings, [
      { line: 1, message: 'a "# " heading in the FAQ; questions are "## " headings' },
      { line: 5, message: 'a "# " heading in the FAQ; questions are "## " headings' },
      { line: 2, message: 'question "Empty?" has no answer' },
    ]);
    assert.equal(result.entries[1]?.answerMarkdown, '# Stray\nA');
  });

  it('errors when a non-empty FAQ has no questions; an empty FAQ is just empty', () => {
    assert.deepEqual(parseFaq('Just text.\n\n### Not level two').errors, [{ message: 'the FAQ has no questions: write each question as a "## " heading' }]);
    assert.deepEqual(parseFaq(''), { entries: [], errors: [], warnings: [] });
    assert.deepEqual(parseFaq('  \n<!-- todo -->\n'), { entries: [], errors: [], warnings: [] });
  });

  it('errors on an empty question heading', () => {
    assert.deepEqual(parseFaq('##\nanswer').errors, [{ line: 1, message: 'empty "## " question heading' }]);
  });

  it('strips HTML comments while keeping lines, and accepts setext headings', () => {
    const result = parseFaq(lines('<!--', '## Hidden', '-->', 'Setext question', '---', 'Answer <!-- x -->.'));
    assert.deepEqual(result.entries, [{ question: 'Setext question', id: 'setext-question', answerMarkdown: 'Answer .', line: 4 }]);
  });

  it('keeps trailing link reference definitions out of the last answer', () => {
    const result = parseFaq('## Q\nSee [docs].\n\n[docs]: https://example.com');
    assert.equal(result.entries[0]?.answerMarkdown, 'See [docs].');
  });
});
