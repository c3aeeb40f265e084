// Asks the caller's user a question while the call runs: under 2026-07-28 the question travels
// in the call's `input_required` answer, never as a request of the server's own.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Asks the user to confirm, then says what they answered.',
  execute: async (state) => {
    const answer = await state.elicit('Go on?', {
      type: 'object',
      properties: { confirm: { type: 'boolean' } },
      required: ['confirm'],
    });
    return `The user answered: ${answer.action}`;
  },
});
