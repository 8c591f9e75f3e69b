import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const page = (name: string): string => fileURLToPath(new URL(name, import.meta.url));

// `lifeline-chat`, `lifeline-chat/react` and `lifeline-chat/ai-sdk` resolve through the package's own
// `exports` to dist/, exactly what an app installing the package gets (so `npm run build`
// runs first). Three pages: index.html (Lifeline's hooks), ai.html (the AI SDK's useChat) and
// support.html (the operator API's view).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: true,
    rollupOptions: { input: { index: page('index.html'), ai: page('ai.html'), support: page('support.html') } },
  },
  logLevel: 'warn',
});
