// Writes the text of the prompt test_input_required_result_prompt: asks the user what context
// to use (an elicitation, asked of the client that gets the prompt), and puts it in.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Writes a prompt around the context the user gives.',
  annotations: { readOnlyHint: true },
  execute: async (state) => {
    const answer = await state.elicit(
      'What context should the prompt use?',
      { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] },
      { key: 'user_context' },
    );
    if (answer.action !== 'accept') return 'Answer without any particular context.';
    return `Answer with this context in mind: ${answer.content?.context}`;
  },
});
