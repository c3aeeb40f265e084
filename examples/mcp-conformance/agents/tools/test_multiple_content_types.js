// Text, an image and a JSON file in one result.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Answers with text, a picture and a JSON file.',
  execute: async () => ({
    status: 'success',
    result: 'Multiple content types test:',
    attachments: [
      { name: 'red-pixel.png', mimeType: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC' },
      { name: 'data.json', mimeType: 'application/json', data: 'eyJ0ZXN0IjoiZGF0YSIsInZhbHVlIjoxMjN9' },
    ],
  }),
});
