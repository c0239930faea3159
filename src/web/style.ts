/** The dashboard's one stylesheet, served at STYLE_PATH (a file of its own, so the pages need no inline style). */
export const STYLE = `:root { color-scheme: light dark; --accent: #1f6f5c; --muted: #667; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 46rem; padding: 0 1rem 2rem; font: 16px/1.5 system-ui, sans-serif; }
header { display: flex; justify-content: space-between; align-items: center; gap: 1rem; padding: 1rem 0; border-bottom: 1px solid #8884; }
.brand { font-weight: 700; font-size: 1.2rem; color: var(--accent); text-decoration: none; }
.who { display: flex; align-items: center; gap: .5rem; margin: 0; }
h1 { font-size: 1.5rem; }
h2 { font-size: 1.15rem; margin-top: 2rem; }
section { margin-bottom: 1rem; }
form { display: grid; grid-template-columns: minmax(0, 1fr); gap: .5rem; max-width: 36rem; }
select, input { max-width: 100%; }
label.check { display: flex; gap: .5rem; align-items: baseline; }
input, select, button { font: inherit; }
button { justify-self: start; padding: .4rem 1rem; border: 0; border-radius: 4px; background: var(--accent); color: #fff; cursor: pointer; }
.who button { background: transparent; color: inherit; border: 1px solid #8888; padding: .2rem .6rem; }
table { border-collapse: collapse; }
th, td { padding: .25rem .75rem .25rem 0; text-align: left; vertical-align: top; }
.result th { font-weight: 600; }
td ul { margin: 0; padding-left: 1rem; }
code, pre { font-family: ui-monospace, monospace; font-size: .9em; overflow-wrap: anywhere; }
pre { padding: .75rem; background: #8881; overflow-x: auto; }
.note { color: var(--muted); font-size: .9rem; }
.error { font-weight: 600; }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; }
`;
