// Asks for a confirmation under the key `confirm`; its answer comes back only with the sealed state the server gave, which the server checks (state-ok).
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Asks the user to confirm.',
  execute: async (state) => {
    const answer = await state.elicit('Please confirm', { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }, { key: 'confirm' });
    return `Confirmed with the request state checked (state-ok): ok=${answer.content?.ok}`;
  },
});
