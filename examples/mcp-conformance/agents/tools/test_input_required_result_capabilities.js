// Asks the user when the client can show a form, else the caller's model.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Asks the user, or their model when their client cannot show a form.',
  execute: async (state) => {
    try {
      const answer = await state.elicit('What is your name?', { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }, { key: 'user_name' });
      return `Hello, ${answer.content?.name}!`;
    } catch (e) {
      if (!String(e.message ?? e).includes('cannot answer')) throw e;
    }
    const answer = await state.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Make up a name' } }], maxTokens: 20 }, { key: 'made_up_name' });
    return `Hello, ${answer.content?.text}!`;
  },
});
