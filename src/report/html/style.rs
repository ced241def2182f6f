//! The page's inline style sheet: layout, chart classes, and print rules (one chart per row at a
//! readable size, no split figures or tables, each earlier run on its own page).

/// The style sheet, inlined in `<style>`.
pub(super) const CSS: &str = r#":root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:#fff;margin:0 auto;max-width:1320px;padding:20px 28px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:30px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
p.meta{color:var(--muted);margin:2px 0}
pre.cmd{background:#f6f8fa;border:1px solid var(--line);border-radius:4px;padding:8px 10px;white-space:pre-wrap;word-break:break-all;font:12px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;margin:6px 0}
.badges span{display:inline-block;border-radius:10px;padding:1px 9px;margin:2px 6px 2px 0;font-size:12px;border:1px solid}
.ok{color:var(--ok);border-color:var(--ok)}
.bad{color:var(--bad);border-color:var(--bad)}
.warn{color:var(--warn);border-color:var(--warn)}
.decision{border-left:4px solid #0b6bcb;background:#f3f8fe;padding:6px 12px;margin:10px 0}
.decision p{margin:4px 0}
.decision p.fail{color:var(--bad);font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:14px 20px;margin:10px 0}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px 8px 4px;break-inside:avoid}
figcaption{color:var(--muted);font-size:12px;margin:2px 4px}
svg.chart{width:100%;height:auto;display:block;font:11px system-ui,"DejaVu Sans",sans-serif}
svg text{fill:#24292f}
svg .ct{font-size:14px;font-weight:600}
svg .at{font-size:11.5px;fill:var(--muted)}
svg .lt{fill:var(--muted)}
svg .grid{stroke:#e6e9ed;stroke-width:1}
svg .frame,svg .tick{stroke:#8c959f;stroke-width:1}
svg .line{fill:none;stroke-width:2}
svg .errbar{fill:none;stroke-width:1.5;opacity:.7}
svg .band{opacity:.12;stroke:none}
svg .pl{font-size:10px;fill:var(--muted)}
svg .mark circle{fill:none;stroke:#cf222e;stroke-width:2.2}
svg .mark text{fill:#cf222e;font-weight:600}
svg .ref line{stroke:#cf222e;stroke-dasharray:5 4;stroke-width:1.3}
svg .ref text{fill:#cf222e;font-weight:600}
svg .ref text,svg .mark text,svg .pl{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
svg .empty{fill:var(--muted);font-size:13px}
.tablewrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;margin:8px 0;font-size:12.5px;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
thead th{background:#f6f8fa}
table.compare td:nth-child(2),table.compare th:nth-child(2){text-align:left}
td.fail{color:var(--bad);font-weight:600}
td.pass{color:var(--ok)}
details{margin:10px 0}
summary{cursor:pointer;font-weight:600}
footer{color:var(--muted);font-size:12px;margin-top:30px;border-top:1px solid var(--line);padding-top:6px}
@media print{body{max-width:none;padding:0;font-size:11px}.charts{grid-template-columns:1fr;gap:8px}figure{width:15cm;margin:0 auto}figcaption{font-size:10px}figure,table,.decision,pre.cmd{break-inside:avoid}h2,h3{break-after:avoid}section.run+section.run,details{break-before:page}.tablewrap{overflow:visible}table{font-size:9px}th,td{padding:2px 3px;white-space:normal}}
"#;
