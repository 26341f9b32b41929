import { Controller, Get, Header, HttpException, HttpStatus } from '@nestjs/common';
import { Registry } from 'prom-client';
import { ConclaveMetrics } from './metrics';
import { Readiness } from './readiness';

/** Liveness, readiness and Prometheus metrics for every service. */
@Controller()
export class HealthController {
  constructor(
    private readonly readiness: Readiness,
    private readonly metrics: ConclaveMetrics,
  ) {}

  @Get('healthz')
  live(): { ok: true } {
    return { ok: true };
  }

  @Get('readyz')
  ready(): { ready: boolean; checks: Record<string, boolean> } {
    const report = this.readiness.report();
    if (!report.ready) throw new HttpException(report, HttpStatus.SERVICE_UNAVAILABLE);
    return report;
  }

  @Get('metrics')
  @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
  metricsText(): Promise<string> {
    return this.metrics.exposition();
  }
}
