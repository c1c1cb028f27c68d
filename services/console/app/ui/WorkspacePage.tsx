import { PageHeading } from './common';
import { QuotasSection } from './QuotasSection';
import { TagsSection } from './TagsSection';

export function WorkspacePage() {
  return (
    <>
      <PageHeading>Tags and quotas</PageHeading>
      <TagsSection />
      <QuotasSection />
    </>
  );
}
