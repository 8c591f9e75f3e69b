import { useLifeline } from 'lifeline-chat/react';
// The example is a built demo that shows the panel on purpose, so it imports the panel that
// ships in every build. An app imports `lifeline-chat/devtools`, which renders nothing in production.
import { LifelineDevtools } from 'lifeline-chat/devtools/production';

/** Lifeline's devtools panel for the page's client, in the side column. */
export function Devtools() {
  return <LifelineDevtools client={useLifeline()} embedded />;
}
