import { receiptBodySchema, type ReceiptAnswer } from '../../protocol/server-schemas.js';
import type { HandlerContext } from './handler-context.js';
import { HttpError, RouteNotFound, jsonResponse } from './responses.js';
import { readSmallJson } from './small-json.js';
import { turnObject, visibleTurn } from './turn-routes.js';

/**
 * `POST /turns/{id}/delivered` (docs/protocol.md section 10): the client proves it holds the
 * whole answer. Idempotent by turn: the first good receipt sets `delivery.at`, later ones
 * change nothing. A log without receipts answers `404`, as a 1.1 server does.
 */
export async function deliveredTurn(context: HandlerContext, request: Request, turnId: string, principal: string): Promise<Response> {
  const { log } = context;
  if (!log.recordDelivery) throw new RouteNotFound();
  const before = await visibleTurn(context, turnId, principal);
  const parsed = receiptBodySchema.safeParse(await readSmallJson(request, 'invalid_receipt'));
  if (!parsed.success) throw new HttpError(400, 'invalid_receipt', 'The body must be {"seq": <the turn.end seq>, "textSha256": "<64 hex>"}.');
  const at = new Date(context.now()).toISOString();
  const outcome = await log.recordDelivery(turnId, parsed.data, at);
  switch (outcome.kind) {
    case 'unknown':
      throw new HttpError(404, 'turn_not_found', 'No such turn.');
    case 'not_ended':
      throw new HttpError(400, 'turn_not_ended', 'The turn has not ended; a receipt follows its turn.end.');
    case 'invalid_seq':
      throw new HttpError(400, 'invalid_receipt', `seq must be the turn.end seq ${outcome.turn.lastSeq}.`);
    case 'mismatch':
      throw new HttpError(409, 'delivery_mismatch', "textSha256 differs from the server's; rebuild the turn from a full replay.");
    case 'recorded': {
      const { turn } = outcome;
      // Counted once: the receipt that made the turn delivered.
      if (before.delivery?.state !== 'delivered' && turn.delivery?.at === at && turn.endedAt !== undefined) {
        context.metrics.delivered(Date.parse(at) - Date.parse(turn.endedAt));
      }
      return jsonResponse(200, { turn: turnObject(turn) } satisfies ReceiptAnswer);
    }
  }
}
