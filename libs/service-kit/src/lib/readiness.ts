import { Injectable } from '@nestjs/common';

/**
 * Readiness is the conjunction of named checks that the service's parts register (NATS
 * connected, projection caught up...). Kubernetes stops routing to a pod that is not ready.
 */
@Injectable()
export class Readiness {
  private readonly checks = new Map<string, () => boolean>();

  register(name: string, check: () => boolean): void {
    this.checks.set(name, check);
  }

  report(): { ready: boolean; checks: Record<string, boolean> } {
    const checks = Object.fromEntries([...this.checks].map(([name, check]) => [name, check()]));
    return { ready: Object.values(checks).every(Boolean), checks };
  }
}
