// Asks the caller for its roots under the key `client_roots`.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: "Lists the caller's roots.",
  execute: async (state) => {
    const answer = await state.roots({ key: 'client_roots' });
    return `Roots: ${answer.roots.map((r) => r.uri).join(', ')}`;
  },
});
