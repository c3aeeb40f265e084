// Asks for a confirmation; the answer counts only with the sealed state unchanged.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Asks the user to confirm, checking the request state.',
  execute: async (state) => {
    const answer = await state.elicit('Please confirm', { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }, { key: 'confirm' });
    return `ok=${answer.content?.ok}`;
  },
});
