import { closeDelayFor } from '../../db/plan-state.js';

/** How long a close of this tenant waits: the server's CLOSE_DELAY, or its plan's where that is longer. */
export const closeDelayOf = closeDelayFor;
