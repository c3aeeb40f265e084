// Asks the user's name under the key `user_name`, and greets them.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Asks the user for their name and greets them.',
  execute: async (state) => {
    const answer = await state.elicit('What is your name?', { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }, { key: 'user_name' });
    return `Hello, ${answer.content?.name ?? 'stranger'}!`;
  },
});
