// Asks the model on the caller's side (MCP sampling) and passes its answer on.
import { defineTool } from '@standardagents/spec';
import { z } from 'zod';

export default defineTool({
  description: "Asks the caller's model to answer a prompt.",
  args: z.object({ prompt: z.string().describe('The prompt to send to the LLM') }),
  execute: async (state, args) => {
    const answer = await state.sample({
      messages: [{ role: 'user', content: { type: 'text', text: args.prompt } }],
      maxTokens: 100,
    });
    return `LLM response: ${answer.content?.text ?? JSON.stringify(answer.content)}`;
  },
});
