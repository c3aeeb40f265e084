// Asks the caller's model a question under the key `capital_question`.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: "Asks the caller's model for the capital of France.",
  execute: async (state) => {
    const answer = await state.sample(
      { messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }], maxTokens: 100 },
      { key: 'capital_question' },
    );
    return `The model said: ${answer.content?.text ?? JSON.stringify(answer.content)}`;
  },
});
