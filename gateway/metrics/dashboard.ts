/**
 * A Grafana dashboard of every metric in the catalogues, made from them, so that it names no metric
 * that does not exist and misses none: a counter as its rate by its labels, a histogram as its 50th
 * and 99th percentiles, a gauge as it is. deploy/grafana/causeway.json is this, held to it by a test.
 */
import { CATALOGUE, type MetricSpec, SERVICE_CATALOGUE } from './catalogue.ts';

const WIDTH = 12;
const HEIGHT = 8;

interface Target {
  expr: string;
  legendFormat: string;
  refId: string;
}

/** What Grafana plots for a metric, one query per line. */
export function queries(spec: MetricSpec): Target[] {
  const by = spec.labels.filter((label) => label !== 'le');
  const legend = by.map((label) => `{{${label}}}`).join(' ') || spec.name;
  const grouped = by.length > 0 ? ` by (${by.join(', ')})` : '';
  if (spec.type === 'counter') {
    return [{ expr: `sum${grouped} (rate(${spec.name}[5m]))`, legendFormat: legend, refId: 'A' }];
  }
  if (spec.type === 'histogram') {
    const buckets = `sum by (${[...by, 'le'].join(', ')}) (rate(${spec.name}_bucket[5m]))`;
    return [0.5, 0.99].map((quantile, index) => ({
      expr: `histogram_quantile(${quantile}, ${buckets})`,
      legendFormat: `p${quantile * 100} ${legend}`,
      refId: String.fromCharCode(65 + index),
    }));
  }
  return [{ expr: spec.name, legendFormat: legend, refId: 'A' }];
}

function panel(spec: MetricSpec, index: number) {
  return {
    id: index + 1,
    type: 'timeseries',
    title: spec.name,
    description: spec.help,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable, not a template of JavaScript's
    datasource: { type: 'prometheus', uid: '${datasource}' },
    gridPos: { x: (index % 2) * WIDTH, y: Math.floor(index / 2) * HEIGHT, w: WIDTH, h: HEIGHT },
    fieldConfig: {
      defaults: { unit: spec.type === 'histogram' ? 's' : spec.type === 'counter' ? 'ops' : 'short' },
      overrides: [],
    },
    options: { legend: { displayMode: 'list', placement: 'bottom' }, tooltip: { mode: 'multi' } },
    targets: queries(spec),
  };
}

/** The dashboard: the gateway's metrics, then a function service's (`causeway serve`). */
export function dashboard() {
  return {
    title: 'Causeway',
    uid: 'causeway',
    description: 'The metrics of Causeway gateways and function services (docs/observability.md).',
    schemaVersion: 39,
    editable: true,
    time: { from: 'now-1h', to: 'now' },
    refresh: '30s',
    templating: {
      list: [{ name: 'datasource', type: 'datasource', query: 'prometheus', label: 'Prometheus' }],
    },
    panels: [...CATALOGUE, ...SERVICE_CATALOGUE].map(panel),
  };
}
