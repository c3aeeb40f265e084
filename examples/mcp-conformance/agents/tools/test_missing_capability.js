// Needs the caller's model (MCP sampling) and cannot do without it: a client that did not
// declare sampling is told which capability the call needs (-32021 under 2026-07-28).
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: "Asks the caller's model for a word; needs the sampling capability.",
  execute: async (state) => {
    const answer = await state.sample({
      messages: [{ role: 'user', content: { type: 'text', text: 'Say one word.' } }],
      maxTokens: 5,
    });
    return `The model said: ${answer.content?.text}`;
  },
});
