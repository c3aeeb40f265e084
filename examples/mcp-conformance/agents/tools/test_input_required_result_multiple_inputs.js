// Asks three things at once: a form, a completion and the roots (each question is noted before any is answered).
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Asks the user, their model and their client at once.',
  execute: async (state) => {
    const [name, greeting, roots] = await Promise.all([
      state.elicit('What is your name?', { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }, { key: 'user_name' }),
      state.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 }, { key: 'greeting' }),
      state.roots({ key: 'client_roots' }),
    ]);
    return `${greeting.content?.text} ${name.content?.name} (${roots.roots.length} roots)`;
  },
});
