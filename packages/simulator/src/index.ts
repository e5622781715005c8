/**
 * floodgate-simulator: runs floodgate's own limiters on virtual time against generated or
 * replayed traffic, scores them against an exact oracle and draws them as SVG and HTML.
 *
 * @packageDocumentation
 */
export { simulate, runLane, type LaneResult, type SimulateOptions, type SimulationResult } from './simulate.js';
export type { LaneRun, Watch } from './engine/lane-run.js';
export { StateProbe, StateRecorder, stateReadingOf, type StateReading, type StateRecorderOptions } from './state.js';
export { positionOf, type SourcePosition } from './scenario-position.js';
export { parseScenario } from './parse-scenario.js';
export type {
  DistributionSpec,
  KeySpread,
  LaneSpec,
  OutageSpec,
  PolicySpec,
  Scenario,
  TraceRow,
  TrafficSpec,
} from './scenario.js';
export { generateArrivals, type Arrivals } from './arrivals.js';
export { parseTrace, traceFormatOf } from './trace.js';
export {
  maxInAnyWindow,
  percentiles,
  scoreLane,
  type KeyTimeline,
  type Score,
  type WaitPercentiles,
} from './oracle.js';
export { promiseOf, buildAlgorithm, describePolicy, type PolicyPromise } from './policy.js';
export { SeededRandom, ZipfSampler } from './random.js';
export { SimulatorError, type SimulatorErrorCode } from './errors.js';
export type { Series } from './series.js';
export { runSimulateCommand, type CommandIo } from './cli.js';
export { renderCharts, type Chart } from './render/charts.js';
export { renderHtmlReport } from './render/html-report.js';
export { EXPORT_COLUMNS, exportDecisions, exportFormatOf, type ExportFormat } from './render/export.js';
export { renderJsonSummary, renderTextSummary, summaryJson } from './render/summary.js';
export { renderLineChart, type ChartLine, type ChartSeries, type LineChartOptions } from './render/svg-chart.js';
export {
  simulateService,
  describeProtection,
  type ServiceLaneResult,
  type ServiceSimulationResult,
  type TierTotals,
} from './service/simulate-service.js';
export { parseServiceScenario } from './service/parse-service.js';
export type {
  AdaptiveSpec,
  CapacityStep,
  Protection,
  ProtectionLaneSpec,
  RetrySpec,
  ServiceScenario,
  ServiceSpec,
  ServiceTimeSpec,
  TierSpec,
} from './service/spec.js';
export type { ServicePhase } from './service/capacity.js';
export type { LevelSeries, TierSeries } from './service/meter.js';
export { ServiceTime, inverseNormal, lognormalSigma } from './service/service-time.js';
export { uniformAt } from './random.js';
export { renderServiceCharts } from './render/service-charts.js';
export { renderServiceHtmlReport } from './render/service-report.js';
export { renderServiceJsonSummary, renderServiceTextSummary, serviceSummaryJson } from './render/service-summary.js';
