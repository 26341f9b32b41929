import { ArgumentsHost, Catch, RpcExceptionFilter } from '@nestjs/common';
import { Observable, throwError } from 'rxjs';

/**
 * NestJS's default RPC filter replaces any non-RpcException with a generic
 * `{status: 'error'}` object, which would erase the typed AcpError code. This filter hands the
 * original error back to PlainJsonNatsServer, which maps it to the reply of DESIGN section 5.
 */
@Catch()
export class PassThroughRpcExceptionFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown, _host: ArgumentsHost): Observable<never> {
    return throwError(() => exception);
  }
}
