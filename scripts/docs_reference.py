#!/usr/bin/env python3
"""Writes docs/reference/<sub>.md from `ttftbench <sub> --help`: one table per help heading, in its
order, and the examples --help ends with. tests/docs.rs fails when a page and --help disagree on
flags, headings or examples; run this after changing src/cli/ and commit the pages.

    python3 scripts/docs_reference.py target/debug/ttftbench docs/reference
"""
import os
import re
import subprocess
import sys

B=sys.argv[1]; out=sys.argv[2]
env=dict(os.environ, COLUMNS='1000')
top=subprocess.run([B,'--help'],capture_output=True,text=True,env=env).stdout
subs=[]
for l in top.split('\n'):
    m=re.match(r'^  (\w+)\s{2,}(.*)',l)
    if m and m.group(1)!='help': subs.append(m.group(1))
def parse(sub):
    t=subprocess.run([B,sub,'--help'],capture_output=True,text=True,env=env).stdout
    lines=t.split('\n')
    about=lines[0]
    groups=[];cur=None;examples=[];mode=None;entry=None
    i=0
    while i<len(lines):
        l=lines[i]
        if re.match(r'^[A-Z][A-Za-z ]*:$',l):
            name=l[:-1]
            if name=='Examples': mode='ex'
            else:
                mode='flags'; cur=(name,[]); groups.append(cur)
            i+=1; continue
        if mode=='ex':
            if l.strip(): examples.append(l[2:] if l.startswith('  ') else l)
        elif mode=='flags':
            m=re.match(r'^ {2,6}(\S.*?)$',l)
            if m and not l.startswith('       ') and (l.strip().startswith('-') or l.strip().startswith('<') or l.strip().startswith('[')):
                spec=l.strip()
                desc=[]
                if re.search(r'\S {2,}\S', spec):
                    spec, first = re.split(r' {2,}', spec, 1)
                    desc.append(first)
                j=i+1
                while j<len(lines) and (lines[j].startswith('          ') or lines[j].strip()==''):
                    if lines[j].strip()=='' and j+1<len(lines) and not lines[j+1].startswith('          '): break
                    desc.append(lines[j].strip()); j+=1
                # split on first blank: description paragraphs; keep first paragraph, defaults
                text=' '.join(desc)
                entry=(spec,text); cur[1].append(entry)
                i=j; continue
        i+=1
    return about,groups,examples
def esc(s):
    # Outside code spans, `<word>` would be read as an HTML tag.
    parts=s.split('`')
    for i in range(0,len(parts),2):
        parts[i]=parts[i].replace('<','&lt;').replace('>','&gt;')
    return '`'.join(parts).replace('|','\\|')
for sub in subs:
    about,groups,examples=parse(sub)
    guides={'profile':'[Profiling Triton and OpenAI servers](../profiling.md), [Open loop and validity](../open-loop.md), [Production-like traffic](../traffic.md), [SLOs and the knee](../slo.md), [Scale-out](../scale-out.md), [Outputs and CI integration](../ci.md)',
      'search':'[Search: the answer, not the ladder](../search.md)',
      'perf':'[perf_analyzer mode](../perf.md), [Scale-out](../scale-out.md#perf-shards)',
      'serve':'[The simulator](../simulator.md)','demo':'[the README\'s quick start](../introduction.md)',
      'report':'[The report](../report.md)','compare':'[Compare, and repetitions against noise](../compare.md)',
      'doctor':'[doctor](../doctor.md)','merge':'[Scale-out: shards and merge](../scale-out.md)',
      'completions':'[Installing](../install.md#shell-completions-man-page-version)','man':'[Installing](../install.md#shell-completions-man-page-version)'}
    lines=[f'# ttftbench {sub}','',about.rstrip('.')+'.','',f'Guide: {guides[sub]}. `ttftbench {sub} --help` prints the same flags under the same headings ([how this page is kept equal to it](index.md)).','']
    for name,flags in groups:
        flags=[f for f in flags if not f[0].startswith('-h,') and not f[0].startswith('-V,')]
        if not flags: continue
        lines+= [f'## {name}','','| flag | meaning |','|---|---|']
        for spec,text in flags:
            # spec like "-m, --model <MODEL>"
            parts=[p.strip() for p in spec.split(', ')]
            cell=', '.join(f'`{p}`' for p in parts)
            # drop possible values lines "- x: ..." -> keep
            text=re.sub(r'\s+',' ',text).strip()
            def pv(m):
                items=re.findall(r'- ([\w.-]+)(?::\s*(.*?))?(?= - [\w.-]+(?::|$| )|$)', m.group(1))
                return ' Values: ' + '; '.join(f'`{n}`' + (f': {d.strip()}' if d.strip() else '') for n,d in items) + '.'
            text=re.sub(r'\s*Possible values: (.*?)(?=\s*\[default|$)', pv, text)
            text=re.sub(r'\[possible values: ([^\]]*)\]', lambda m: 'Values: ' + ', '.join(f'`{v.strip()}`' for v in m.group(1).split(',')) + '.', text)
            text=re.sub(r'\[default: ([^\]]*)\]', lambda m: f'Default: `{m.group(1)}`.', text)
            text=re.sub(r'\[env: ([^\]]*)\]', lambda m: f'Environment: `{m.group(1).rstrip("=")}`.', text)
            text=re.sub(r'\[alias(?:es)?: ([^\]]*)\]', lambda m: 'Also `' + m.group(1) + '`.', text)
            text=re.sub(r'(?<=[^.`])\s+(Values:|Default:|Environment:|Also `)', r'. \1', text)
            lines.append(f'| {esc(cell)} | {esc(text)} |')
        lines.append('')
    if examples:
        lines+=['## Examples','','<!-- doc-test: check the examples `ttftbench '+sub+' --help` ends with: they use Triton\'s default ports or an earlier run\'s files -->','```sh']+examples+['```','']
    open(f'{out}/{sub}.md','w').write('\n'.join(lines))
    print(sub, [ (g,len(f)) for g,f in groups], len(examples))
