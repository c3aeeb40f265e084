// Asks for a confirmation under the key `confirm`. When the retry brings the request state the
// server gave, the server checks it before the tool runs (a changed one is refused), so a
// retry that reaches this tool's answer had its state checked (state-ok).
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Asks the user to confirm.',
  execute: async (state) => {
    const answer = await state.elicit('Please confirm', { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }, { key: 'confirm' });
    return `Confirmed with the request state checked (state-ok): ok=${answer.content?.ok}`;
  },
});
