// Asks the caller's user for a name and an email address (MCP elicitation), and says what they
// answered.
import { defineTool } from '@standardagents/spec';
import { z } from 'zod';

export default defineTool({
  description: 'Asks the user for their name and email address.',
  args: z.object({ message: z.string().describe('The message to show the user') }),
  execute: async (state, args) => {
    const answer = await state.elicit(args.message, {
      type: 'object',
      properties: {
        username: { type: 'string', description: "User's response" },
        email: { type: 'string', description: "User's email address" },
      },
      required: ['username', 'email'],
    });
    return `User response: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`;
  },
});
