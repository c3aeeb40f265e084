// A form whose every field has a default (SEP-1034).
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Asks the user to confirm values that all have defaults.',
  execute: async (state) => {
    const answer = await state.elicit('Please confirm your details (each has a default).', {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'User name', default: 'John Doe' },
        age: { type: 'integer', description: 'User age', default: 30 },
        score: { type: 'number', description: 'User score', default: 95.5 },
        status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
        verified: { type: 'boolean', description: 'Verification status', default: true },
      },
    });
    return `Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`;
  },
});
