import { defineTool } from '@standardagents/spec';
import { z } from 'zod';

// The spec's example asks a vector store; this stand-in answers from a fixed list.
async function searchVectorStore(vectorStoreId: string, query: string, maxResults: number) {
  const documents = ['tides.md', 'harbour-rules.md', 'weather-notes.md'];
  return { vectorStoreId, query, hits: documents.slice(0, maxResults) };
}

export default defineTool({
  description: 'Search through uploaded files using vector embeddings',
  args: z.object({
    query: z.string().describe('Search query'),
    maxResults: z.number().optional().default(5),
  }),
  execute: async (state, args) => {
    const vectorStoreId = state.tenvs.vectorStoreId;
    const results = await searchVectorStore(vectorStoreId, args.query, args.maxResults);
    return { status: 'success', result: JSON.stringify(results) };
  },
  tenvs: z.object({
    vectorStoreId: z.string().describe('OpenAI Vector Store ID'),
    userLocation: z.string().optional().describe('User location for relevance'),
  }),
});
